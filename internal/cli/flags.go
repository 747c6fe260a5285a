package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// parseFlags parses args, then fills every flag not given on the command
// line from its environment twin ENGRAM_<FLAG> (dashes become underscores):
// flags win over the environment, the environment over defaults.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// The flag package has printed the message to fs.Output().
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, e)
			}
		}
	})
	return err
}

// parseCommandFlags is parseFlags for a command, answering -h/--help
// itself: the help goes to stdout and the result is flag.ErrHelp (exit 0).
// A malformed command line is reported on stderr with a pointer to --help
// (errUsage, exit 2).
func parseCommandFlags(fs *flag.FlagSet, args []string, synopsis string, stdout, stderr io.Writer) error {
	fs.SetOutput(stderr)
	fs.Usage = func() {} // help is printed below, to stdout, only when asked for
	err := parseFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeFlagHelp(stdout, fs, synopsis)
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "Run 'engram %s --help' for its flags.\n", fs.Name())
	}
	return err
}

// writeFlagHelp lists every flag of fs with its default and its
// environment twin. It is generated from the flag definitions, so a new
// flag documents itself.
func writeFlagHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "Usage: %s\n\nFlags (each can also be set by the ENGRAM_* variable shown; a flag on the command line wins):\n", synopsis)
	fs.VisitAll(func(f *flag.Flag) {
		_, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "%s\n      %s\n      env %s", flagSynopsis(f, ""), usage, envName(f.Name))
		if f.DefValue != "" {
			fmt.Fprintf(w, ", default %s", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// writeFlags lists the flags of a command-line command in the form people
// type them: "--name VALUE", and a one-letter flag whose usage is "short
// for --NAME" beside NAME ("-s, --stack"). The flag package's own listing
// writes "-name", which reads as a bundle of short options to GNU users.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	short := map[string]string{} // long name → its one-letter twin
	fs.VisitAll(func(f *flag.Flag) {
		if long, ok := shortFor(f); ok {
			short[long] = f.Name
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := shortFor(f); ok {
			return
		}
		_, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "%s\n      %s", flagSynopsis(f, short[f.Name]), usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// shortFor reports the long flag a one-letter flag stands for.
func shortFor(f *flag.Flag) (long string, ok bool) {
	long, ok = strings.CutPrefix(f.Usage, "short for --")
	return long, ok && len(f.Name) == 1
}

// flagSynopsis is a flag's help line: "  --name VALUE", with its one-letter
// twin first when it has one ("  -s, --stack string").
func flagSynopsis(f *flag.Flag, short string) string {
	line := "  "
	if short != "" {
		line += "-" + short + ", "
	}
	line += "--" + f.Name
	if valueName, _ := flag.UnquoteUsage(f); valueName != "" {
		line += " " + valueName
	}
	return line
}

func envName(flagName string) string {
	return "ENGRAM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// engramHome is ~/.engram, or ENGRAM_HOME.
func engramHome() string {
	if h := os.Getenv("ENGRAM_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".engram"
	}
	return filepath.Join(home, ".engram")
}
