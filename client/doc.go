// Package client is a small typed Go client of Engram's public HTTP API
// (the /v1 endpoints of docs/api.md).
//
//	c := client.New("http://127.0.0.1:8080/v1", apiKey)
//	res, err := c.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "deploy"})
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == "not_found" { ... }
//
// Every method takes a context first and returns the response's data
// object decoded into a struct that mirrors its JSON. Failures the server
// reports come back as *Error, decoded from the failure envelope.
//
// Secrets (API keys, session tokens, verification tokens) are only sent
// over https, or over http to a loopback address (decisions §7); any other
// http URL makes such a call fail with ErrInsecureURL before anything is
// sent, and redirects are held to the same rule.
package client
