package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
)

const authUsage = `Usage: engram auth <subcommand> [flags]

  register --email ADDRESS      create an account in the cloud; a verification token is mailed
  verify TOKEN                  verify the address; prints the first API key once and saves it
  login [--api-key-file PATH]   log in with a key from a file, stdin or a prompt without echo
  status                        show the cloud, the key prefix and the account
  logout                        forget the local credentials (the key stays active)

Run 'engram auth <subcommand> --help' for its flags.
`

const keysUsage = `Usage: engram keys <subcommand> [flags]

  list                list the account's keys (prefixes only)
  create NAME         create a key; the full key is printed once
  revoke ID [--yes]   revoke a key (asks first)
  cycle ID [--yes]    replace a key by a new one in one step (asks first); the new key is printed once

Run 'engram keys <subcommand> --help' for its flags.
`

// cloudRequestTimeout bounds account and key requests.
const cloudRequestTimeout = 30 * time.Second

func authCommand(ctx context.Context, c *cli, args []string) error {
	if c.isHelp(args, authUsage) {
		return nil
	}
	if len(args) == 0 {
		return usageErrorf("auth: say register, verify, login, status or logout")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "register":
		return authRegister(ctx, c, rest)
	case "verify":
		return authVerify(ctx, c, rest)
	case "login":
		return authLogin(ctx, c, rest)
	case "status":
		return authStatus(ctx, c, rest)
	case "logout":
		return authLogout(ctx, c, rest)
	}
	return usageErrorf("auth: unknown subcommand %q (register, verify, login, status or logout)", sub)
}

func authRegister(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("auth register", "--email ADDRESS", "Create an account in the cloud (cloud.base_url); a verification token is mailed to the address.")
	email := flags.String("email", "", "e-mail address (required)")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	if *email == "" {
		return usageErrorf("auth register: --email is required")
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	reg, err := cl.client(cloudRequestTimeout).Register(ctx, *email)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(reg)
	}
	fmt.Fprintf(c.stdout, "%s\nNext: engram auth verify TOKEN (the token is in the mail to %s)\n", reg.Message, *email)
	return nil
}

func authVerify(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("auth verify", "TOKEN", "Verify the e-mail address with the mailed token; the account's first API key is printed once and saved in credentials.json (mode 0600).")
	pos, err := c.parse(flags, args, 1, 1)
	if err != nil {
		return err
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	v, err := cl.client(cloudRequestTimeout).Verify(ctx, strings.TrimSpace(pos[0]))
	if err != nil {
		return err
	}
	if err := c.saveCredentials(credentials{BaseURL: cl.settings.baseURL, UserID: v.UserID, APIKey: v.APIKey}); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(v)
	}
	fmt.Fprintf(c.stdout, "verified; user %s\nAPI key (shown only now; saved in %s):\n%s\n", v.UserID, c.credentialsPath(), v.APIKey)
	return nil
}

func authLogin(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("auth login", "[--api-key-file PATH]", "Log in to the cloud with an API key, read from --api-key-file, from stdin, or from a prompt that does not echo (never from a flag value); it is checked with the cloud and saved in credentials.json (mode 0600).")
	keyFile := flags.String("api-key-file", "", "file holding the API key ('-' for stdin)")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	key, err := c.readAPIKey(*keyFile)
	if err != nil {
		return err
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	if !client.SecureBaseURL(cl.settings.baseURL) {
		return insecureURLError(cl.settings.baseURL)
	}
	api := cl.client(cloudRequestTimeout)
	sess, err := api.Login(ctx, key)
	if err != nil {
		return err
	}
	status, err := api.WithAPIKey(key).Status(ctx)
	if err != nil {
		return err
	}
	if err := c.saveCredentials(credentials{BaseURL: cl.settings.baseURL, UserID: sess.UserID, Email: status.Email, APIKey: key}); err != nil {
		return err
	}
	out := map[string]any{"base_url": cl.settings.baseURL, "user_id": sess.UserID, "email": status.Email, "key_prefix": keyPrefix(key)}
	if c.json {
		return c.printJSON(out)
	}
	fmt.Fprintf(c.stdout, "logged in to %s as %s (key %s)\n", cl.settings.baseURL, status.Email, keyPrefix(key))
	return nil
}

// readAPIKey reads the key from a file, from stdin when it is not a
// terminal, or from a prompt on the terminal without echo.
func (c *cli) readAPIKey(path string) (string, error) {
	var raw []byte
	var err error
	f, isFile := c.stdin.(*os.File)
	switch {
	case path != "" && path != "-":
		raw, err = os.ReadFile(path)
	case isFile && path == "" && term.IsTerminal(int(f.Fd())):
		fmt.Fprint(c.stderr, "API key: ")
		raw, err = term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
	default:
		raw, err = bufio.NewReader(io.LimitReader(c.stdin, 4096)).ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("read the API key: %w", err)
	}
	key := strings.TrimSpace(string(raw))
	if key == "" {
		return "", usageErrorf("auth login: no API key given (use --api-key-file PATH, stdin, or the prompt)")
	}
	return key, nil
}

// authStatusJSON is `engram auth status --json`.
type authStatusJSON struct {
	BaseURL   string             `json:"base_url"`
	LoggedIn  bool               `json:"logged_in"`
	KeyPrefix string             `json:"key_prefix,omitempty"`
	Reachable bool               `json:"reachable"`
	Account   *client.AuthStatus `json:"account"`
	Error     string             `json:"error,omitempty"`
}

func authStatus(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("auth status", "", "Show the cloud, whether this machine is logged in to it, and the account (checked with the cloud).")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	out := authStatusJSON{BaseURL: cl.settings.baseURL, LoggedIn: cl.configured()}
	if cl.configured() {
		out.KeyPrefix = keyPrefix(cl.creds.APIKey)
		ctx, cancel := context.WithTimeout(ctx, cl.settings.timeout)
		defer cancel()
		st, err := cl.client(cl.settings.timeout).Status(ctx)
		if reason, fallback := cloudFailure(err, cl.settings.timeout); err != nil && fallback && !client.IsStatus(err, 401) {
			out.Error = reason
		} else if err != nil {
			out.Reachable, out.Error = true, err.Error()
		} else {
			out.Reachable, out.Account = true, st
		}
	}
	if c.json {
		return c.printJSON(out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "cloud\t%s\n", out.BaseURL)
	if !out.LoggedIn {
		fmt.Fprintf(tw, "logged in\tno (engram auth login)\n")
		return tw.Flush()
	}
	fmt.Fprintf(tw, "key\t%s\n", out.KeyPrefix)
	if out.Account != nil {
		fmt.Fprintf(tw, "user\t%s (%s)\n", out.Account.Email, out.Account.UserID)
		fmt.Fprintf(tw, "agents\t%s\n", strings.Join(out.Account.Agents, ", "))
	} else {
		fmt.Fprintf(tw, "error\t%s\n", out.Error)
	}
	return tw.Flush()
}

func authLogout(_ context.Context, c *cli, args []string) error {
	flags := c.flags("auth logout", "", "Forget the local credentials (the key itself stays active in the cloud until revoked).")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	err := os.Remove(c.credentialsPath())
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"logged_out": existed})
	}
	if existed {
		fmt.Fprintln(c.stdout, "logged out; the key stays active in the cloud until you revoke it")
	} else {
		fmt.Fprintln(c.stdout, "not logged in")
	}
	return nil
}

func keysCommand(ctx context.Context, c *cli, args []string) error {
	if c.isHelp(args, keysUsage) {
		return nil
	}
	if len(args) == 0 {
		return usageErrorf("keys: say list, create NAME, revoke ID or cycle ID")
	}
	sub, rest := args[0], args[1:]
	shapes := map[string]string{"list": "", "create": "NAME", "revoke": "ID [--yes]", "cycle": "ID [--yes]"}
	usage, ok := shapes[sub]
	if !ok {
		return usageErrorf("keys: unknown subcommand %q (list, create, revoke or cycle)", sub)
	}
	flags := c.flags("keys "+sub, usage, "Manage the account's API keys in the cloud. Full keys are printed once, at create and cycle; listings show prefixes only.")
	yes := flags.Bool("yes", false, "do not ask for confirmation (revoke, cycle)")
	n := 1
	if sub == "list" {
		n = 0
	}
	pos, err := c.parse(flags, rest, n, n)
	if err != nil {
		return err
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	if err := cl.requireLogin(); err != nil {
		return err
	}
	api := cl.client(cloudRequestTimeout)
	switch sub {
	case "list":
		keys, err := api.ListKeys(ctx)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"keys": keys})
		}
		now := time.Now()
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED\tLAST USED\tACTIVE")
		for _, k := range keys {
			used := "never"
			if k.LastUsedAt != nil {
				used = relativeTime(*k.LastUsedAt, now)
			}
			mark := ""
			if strings.HasPrefix(cl.creds.APIKey, k.Prefix) && k.IsActive {
				mark = " (this machine)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%v%s\n", k.ID, k.Name, k.Prefix, relativeTime(k.CreatedAt, now), used, k.IsActive, mark)
		}
		return tw.Flush()
	case "create":
		k, err := api.CreateKey(ctx, pos[0])
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(k)
		}
		fmt.Fprintf(c.stdout, "created key %s (%s); shown only now:\n%s\n", k.Name, k.ID, k.Key)
		return nil
	}
	own, err := c.isOwnKey(ctx, api, cl, pos[0])
	if err != nil {
		return err
	}
	question := fmt.Sprintf("%s key %s?", map[string]string{"revoke": "Revoke", "cycle": "Cycle"}[sub], pos[0])
	if own {
		question += " This machine logs in with it."
	}
	if !*yes {
		if err := c.confirm(question); err != nil {
			return err
		}
	}
	if sub == "revoke" {
		r, err := api.RevokeKey(ctx, pos[0])
		if err != nil {
			return err
		}
		if own {
			c.notice("engram: this machine's key is revoked; run engram auth login with another key")
		}
		if c.json {
			return c.printJSON(r)
		}
		fmt.Fprintf(c.stdout, "revoked %s\n", r.ID)
		return nil
	}
	cy, err := api.CycleKey(ctx, pos[0])
	if err != nil {
		return err
	}
	if own {
		creds := *cl.creds
		creds.APIKey = cy.NewKey
		if err := c.saveCredentials(creds); err != nil {
			return fmt.Errorf("the key was cycled but the new key could not be saved (it is %s): %w", cy.NewKey, err)
		}
	}
	if c.json {
		return c.printJSON(cy)
	}
	fmt.Fprintf(c.stdout, "cycled %s → %s; the new key, shown only now:\n%s\n", cy.OldKeyID, cy.NewKeyID, cy.NewKey)
	if own {
		c.notice("engram: saved the new key in %s", c.credentialsPath())
	}
	return nil
}

// isOwnKey reports whether id is the key this machine logs in with.
func (c *cli) isOwnKey(ctx context.Context, api *client.Client, cl *cloud, id string) (bool, error) {
	keys, err := api.ListKeys(ctx)
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if k.ID == id {
			return strings.HasPrefix(cl.creds.APIKey, k.Prefix), nil
		}
	}
	return false, domain.NotFound("key " + id)
}
