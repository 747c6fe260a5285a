package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// completionCommand prints a shell completion script. The scripts are
// generated from the command table and each command's flag set, so a new
// command, subcommand or flag completes without touching this file
// (docs/cli.md "Design notes" says why this is not cobra).
func completionCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("completion", "bash|zsh|fish",
		"Print the completion script of a shell. Load it for this session with\n"+
			"  bash: source <(engram completion bash)\n"+
			"  zsh:  source <(engram completion zsh)   (or save it as _engram in a directory of $fpath)\n"+
			"  fish: engram completion fish | source  (or save it as ~/.config/fish/completions/engram.fish)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	write, ok := completionWriters[pos[0]]
	if !ok {
		return usageErrorf("completion: no script for %q (bash, zsh or fish)", pos[0])
	}
	write(c.stdout, completionSpecs(ctx))
	return nil
}

var completionWriters = map[string]func(io.Writer, []completionSpec){
	"bash": writeBashCompletion,
	"zsh":  writeZshCompletion,
	"fish": writeFishCompletion,
}

// globalOptions come before the command name (parseGlobal).
var globalOptions = []string{"-s", "--stack", "--json", "--quiet", "--help", "--version"}

// completionSpec is what the scripts complete for one command.
type completionSpec struct {
	name, summary string
	subcommands   []string
	// flags maps "" (the command without a subcommand) and each
	// subcommand to the flags it takes: "--name", or "-x" for a
	// one-letter flag.
	flags map[string][]string
}

// key names the flags of the command, or of one of its subcommands, as
// the scripts look them up: "belief", "keys create".
func (s completionSpec) key(sub string) string {
	if sub == "" {
		return s.name
	}
	return s.name + " " + sub
}

// completionSpecs lists every command of the binary: the server's and the
// command line's.
func completionSpecs(ctx context.Context) []completionSpec {
	specs := []completionSpec{
		{name: "serve", summary: "run the HTTP API", flags: map[string][]string{"": flagNames(serveFlags(&serveConfig{}))}},
		{name: "projections", summary: "rebuild read models from the event log, or show their checkpoints", subcommands: []string{"rebuild", "status"}},
		{name: "models", summary: "convert GloVe word vectors into a local model", subcommands: []string{"import-glove"}},
		{name: "healthcheck", summary: "check a server's /healthz", flags: map[string][]string{"": flagNames(healthcheckFlags(&healthcheckConfig{}))}},
		{name: "version", summary: "print the version, commit and Go version"},
		{name: "help", summary: "list the commands"},
	}
	for _, cmd := range cliCommands() {
		spec := completionSpec{name: cmd.name, summary: cmd.summary, subcommands: cmd.subcommands, flags: map[string][]string{}}
		spec.flags[""] = cliFlagNames(ctx, cmd, nil)
		for _, sub := range cmd.subcommands {
			spec.flags[sub] = cliFlagNames(ctx, cmd, []string{sub})
		}
		specs = append(specs, spec)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].name < specs[j].name })
	return specs
}

// cliFlagNames are the flags of a command-line command (with args, a
// subcommand): the command is asked for its help, which builds its flag
// set and stops before it does anything. A command group without a
// subcommand has no flags of its own.
func cliFlagNames(ctx context.Context, cmd cliCommand, args []string) []string {
	c := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, stack: defaultStack}
	if err := cmd.run(ctx, c, append(args, "--help")); err != nil && c.flagSet == nil {
		return nil
	}
	if c.flagSet == nil {
		return nil
	}
	return flagNames(c.flagSet)
}

// flagNames lists a flag set as typed: "--name", "-x" for one letter.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 {
			names = append(names, "-"+f.Name)
		} else {
			names = append(names, "--"+f.Name)
		}
	})
	return append(names, "--help")
}

// The scripts share one way of reading a command line: skip the global
// options (and the stack name after -s/--stack), take the first word as
// the command and, if it is one of the command's subcommands, the second
// as its subcommand. A word starting with '-' completes the flags of the
// command (or subcommand); after -s/--stack come the stack names (the
// directories under $ENGRAM_HOME/stacks); otherwise the subcommands, and
// then files.

// writeSubcommandAndFlagCases writes the two shell functions bash and zsh
// share: _engram_subcommands and _engram_flags, a case over a command (or
// "command subcommand") that echoes what may follow it.
func writeSubcommandAndFlagCases(w io.Writer, specs []completionSpec) {
	fmt.Fprint(w, `_engram_subcommands() {
	case $1 in
`)
	for _, s := range specs {
		if len(s.subcommands) > 0 {
			fmt.Fprintf(w, "\t%s) echo %s ;;\n", s.name, shellQuote(strings.Join(s.subcommands, " ")))
		}
	}
	fmt.Fprint(w, `	esac
}

_engram_flags() {
	case $1 in
`)
	forEachFlagList(specs, func(key string, flags []string) {
		fmt.Fprintf(w, "\t%s) echo %s ;;\n", shellQuote(key), shellQuote(strings.Join(flags, " ")))
	})
	fmt.Fprint(w, `	esac
}
`)
}

func writeBashCompletion(w io.Writer, specs []completionSpec) {
	fmt.Fprint(w, `# bash completion for engram, generated by 'engram completion bash'.
# Load it with: source <(engram completion bash)

`)
	writeSubcommandAndFlagCases(w, specs)
	fmt.Fprintf(w, `
_engram() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd= sub= i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s | --stack) ((i++)) ;;
		-*) ;;
		*)
			if [[ -z $cmd ]]; then
				cmd=${COMP_WORDS[i]}
			elif [[ -z $sub ]]; then
				sub=${COMP_WORDS[i]}
			fi
			;;
		esac
	done
	case $prev in
	-s | --stack)
		COMPREPLY=($(compgen -W "$(command ls "${ENGRAM_HOME:-$HOME/.engram}/stacks" 2>/dev/null)" -- "$cur"))
		return
		;;
	esac
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W %s -- "$cur"))
		else
			COMPREPLY=($(compgen -W %s -- "$cur"))
		fi
		return
	fi
	local subs key=$cmd
	subs=$(_engram_subcommands "$cmd")
	if [[ -n $sub && " $subs " == *" $sub "* ]]; then
		key="$cmd $sub"
	else
		sub=
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_engram_flags "$key")" -- "$cur"))
	elif [[ -n $subs && -z $sub ]]; then
		COMPREPLY=($(compgen -W "$subs" -- "$cur"))
	fi
}

complete -o default -F _engram engram
`, shellQuote(strings.Join(globalOptions, " ")), shellQuote(strings.Join(commandNames(specs), " ")))
}

func writeZshCompletion(w io.Writer, specs []completionSpec) {
	fmt.Fprint(w, `#compdef engram
# zsh completion for engram, generated by 'engram completion zsh'.
# Load it with: source <(engram completion zsh), or save it as _engram in a
# directory of $fpath.

`)
	writeSubcommandAndFlagCases(w, specs)
	fmt.Fprint(w, `
_engram() {
	local -a commands
	commands=(
`)
	for _, s := range specs {
		fmt.Fprintf(w, "\t\t%s\n", shellQuote(s.name+":"+s.summary))
	}
	fmt.Fprintf(w, `	)
	local cmd= sub= i
	for ((i = 2; i < CURRENT; i++)); do
		case ${words[i]} in
		-s | --stack) ((i++)) ;;
		-*) ;;
		*)
			if [[ -z $cmd ]]; then
				cmd=${words[i]}
			elif [[ -z $sub ]]; then
				sub=${words[i]}
			fi
			;;
		esac
	done
	case ${words[CURRENT-1]} in
	-s | --stack)
		local -a stacks
		stacks=(${ENGRAM_HOME:-$HOME/.engram}/stacks/*(N/:t))
		compadd -a stacks
		return
		;;
	esac
	if [[ -z $cmd ]]; then
		if [[ $PREFIX == -* ]]; then
			compadd -- %s
		else
			_describe -t commands 'engram command' commands
		fi
		return
	fi
	local subs key=$cmd
	subs=$(_engram_subcommands $cmd)
	if [[ -n $sub && " $subs " == *" $sub "* ]]; then
		key="$cmd $sub"
	else
		sub=
	fi
	if [[ $PREFIX == -* ]]; then
		compadd -- ${=$(_engram_flags $key)}
	elif [[ -n $subs && -z $sub ]]; then
		compadd -- ${=subs}
	else
		_files
	fi
}

if [[ $funcstack[1] == _engram ]]; then
	_engram "$@"
else
	compdef _engram engram
fi
`, strings.Join(globalOptions, " "))
}

func writeFishCompletion(w io.Writer, specs []completionSpec) {
	fmt.Fprint(w, `# fish completion for engram, generated by 'engram completion fish'.
# Load it with: engram completion fish | source, or save it as
# ~/.config/fish/completions/engram.fish

function __engram_subcommands
	switch $argv[1]
`)
	for _, s := range specs {
		if len(s.subcommands) > 0 {
			fmt.Fprintf(w, "\t\tcase %s\n\t\t\techo %s\n", s.name, strings.Join(s.subcommands, " "))
		}
	}
	fmt.Fprint(w, `	end
end

# __engram_key prints the command, or "command subcommand", typed so far.
function __engram_key
	set -l words (commandline -opc)
	set -e words[1]
	set -l found
	set -l skip 0
	for w in $words
		if test $skip = 1
			set skip 0
			continue
		end
		switch $w
			case -s --stack
				set skip 1
			case '-*'
			case '*'
				set -a found $w
		end
	end
	if test (count $found) -eq 0
		return
	end
	if test (count $found) -ge 2; and contains -- $found[2] (string split ' ' (__engram_subcommands $found[1]))
		echo "$found[1] $found[2]"
	else
		echo $found[1]
	end
end

# __engram_at is true when the command line is at the command (or
# "command subcommand") given; with no argument, before any command.
function __engram_at
	set -l key (__engram_key)
	test "$key" = "$argv"
end

# __engram_files is true where files complete: after a command that takes
# no subcommand, or after the subcommand.
function __engram_files
	set -l key (__engram_key)
	test -n "$key"; or return 1
	string match -q '* *' -- $key; and return 0
	set -l subs (__engram_subcommands $key)
	test -z "$subs"
end

function __engram_stacks
	set -l home ~/.engram
	set -q ENGRAM_HOME; and set home $ENGRAM_HOME
	for d in $home/stacks/*/
		basename $d
	end
end

complete -c engram -f
complete -c engram -n __engram_at -s s -l stack -x -a '(__engram_stacks)' -d 'local stack (agent id)'
complete -c engram -n __engram_at -l json -d 'print JSON'
complete -c engram -n __engram_at -l quiet -d 'no progress or notices on stderr'
complete -c engram -n __engram_at -l help -d 'list the commands'
complete -c engram -n __engram_at -l version -d 'print the version'
`)
	for _, s := range specs {
		fmt.Fprintf(w, "complete -c engram -n __engram_at -a %s -d %s\n", s.name, shellQuote(s.summary))
	}
	for _, s := range specs {
		for _, sub := range s.subcommands {
			fmt.Fprintf(w, "complete -c engram -n '__engram_at %s' -a %s\n", s.name, sub)
		}
	}
	forEachFlagList(specs, func(key string, flags []string) {
		for _, f := range flags {
			option := "-l " + strings.TrimPrefix(f, "--")
			if len(f) == 2 {
				option = "-s " + f[1:]
			}
			fmt.Fprintf(w, "complete -c engram -n %s %s\n", shellQuote("__engram_at '"+key+"'"), option)
		}
	})
	fmt.Fprint(w, "complete -c engram -n __engram_files -F\n")
}

// forEachFlagList calls fn for every command and subcommand with flags,
// in order.
func forEachFlagList(specs []completionSpec, fn func(key string, flags []string)) {
	for _, s := range specs {
		for _, sub := range append([]string{""}, s.subcommands...) {
			if flags := s.flags[sub]; len(flags) > 0 {
				fn(s.key(sub), flags)
			}
		}
	}
}

func commandNames(specs []completionSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return names
}

// shellQuote quotes s for sh, zsh and fish: in single quotes, where a
// single quote is written as quote, backslash, quote, quote.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
