package hpactl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// backup writes the server's hot backup of its bbolt store (AdminService.Backup) to --output:
// to FILE.tmp first, synced, then renamed over FILE and the directory synced, so FILE is
// either the previous file or a whole backup, never a torn one. The call has no deadline
// unless --timeout is given: a large store takes as long as it takes.
func (a *App) backup(ctx context.Context, args []string) error {
	fs := a.newFlagSet("backup")
	output := fs.String("output", "", "`file` to write the backup to (a bbolt file; replaced only once the backup is complete)")
	fs.StringVar(output, "o", "", "shorthand for --output")
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *output == "" {
		return errors.New("backup needs --output FILE")
	}
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	if timeoutSet && conn.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, conn.timeout)
		defer cancel()
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	stream, err := pb.NewAdminServiceClient(c.Conn()).Backup(ctx, &pb.BackupRequest{})
	if err != nil {
		return err
	}
	n, err := writeFileAtomically(*output, func(w io.Writer) (int64, error) {
		var n int64
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			k, err := w.Write(resp.GetChunk())
			n += int64(k)
			if err != nil {
				return n, err
			}
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "wrote %d bytes to %s\n", n, *output)
	return nil
}

// writeFileAtomically writes path through path+".tmp": fill writes the content, the file is
// synced and renamed over path, and the directory synced so the rename survives a crash. On
// any error the temporary file is removed and path is left as it was.
func writeFileAtomically(path string, fill func(io.Writer) (int64, error)) (n int64, err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if n, err = fill(f); err != nil {
		return n, err
	}
	if err = f.Sync(); err != nil {
		return n, err
	}
	if err = f.Close(); err != nil {
		return n, err
	}
	if err = os.Rename(tmp, path); err != nil {
		return n, err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return n, err
	}
	defer dir.Close()
	return n, dir.Sync()
}
