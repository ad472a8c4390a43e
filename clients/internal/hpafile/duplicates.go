package hpafile

import (
	"fmt"
	"strconv"

	yamlv3 "go.yaml.in/yaml/v3"
)

// duplicate is a mapping key written twice in one mapping.
type duplicate struct {
	path            string
	line, firstLine int
}

func (d duplicate) message() string {
	return fmt.Sprintf("duplicate field (line %d; first at line %d)", d.line, d.firstLine)
}

// duplicateKeys finds the keys written twice in one mapping of the YAML document doc, with
// their paths. Converting YAML to JSON keeps the last of them silently, so the JSON decoder
// cannot see them. A document YAML cannot parse has none (its conversion reports the error).
func duplicateKeys(doc []byte) []duplicate {
	var root yamlv3.Node
	if yamlv3.Unmarshal(doc, &root) != nil {
		return nil
	}
	var out []duplicate
	var walk func(n *yamlv3.Node, path string)
	walk = func(n *yamlv3.Node, path string) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"["+strconv.Itoa(i)+"]")
			}
		case yamlv3.MappingNode:
			first := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind != yamlv3.ScalarNode || k.Tag == "!!merge" {
					continue
				}
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if line, seen := first[k.Value]; seen {
					out = append(out, duplicate{path: p, line: k.Line, firstLine: line})
					continue
				}
				first[k.Value] = k.Line
				walk(v, p)
			}
		}
		// Aliases are not followed: an anchor's duplicates are reported where it is written.
	}
	walk(&root, "")
	return out
}
