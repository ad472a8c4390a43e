package storetest

import "strconv"

// RecordV1 is the record of the target c/ns/old as binaries before record version 2 stored it:
// the decision's conditions written out, the same as the state's. rev, when positive, is the
// revision it carries (bbolt writes it into the record; etcd keeps it as the key's
// ModRevision). Backends store it raw to check that they still serve what older binaries wrote.
func RecordV1(rev int64) string {
	r := `{"v":1,`
	if rev > 0 {
		r += `"rev":` + strconv.FormatInt(rev, 10) + `,`
	}
	return r + `"key":{"cluster":"c","namespace":"ns","name":"old"},` +
		`"spec":{"scaleTargetRef":{"kind":"Deployment","name":"old"},"maxReplicas":5},` +
		`"state":{"seeded":true,"history":{},"conditions":[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale","lastTransitionTime":"2026-01-01T00:00:00Z"}]},` +
		`"lastDecision":{"time":"2026-01-01T00:00:00Z","currentReplicas":2,"desiredReplicas":3,` +
		`"conditions":[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale","lastTransitionTime":"2026-01-01T00:00:00Z"}],` +
		`"explanation":{"winningMetric":0,"proposal":3,"stabilized":3,"limited":3,"final":3}},"lastSeen":"2026-01-01T00:00:00Z"}`
}
