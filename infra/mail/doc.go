// Package mail delivers Engram's outgoing e-mail (decisions §3): over SMTP when
// ENGRAM_SMTP_URL is set, otherwise as RFC 5322 .eml files in an outbox
// directory, so a server without a mail relay still lets its operator (and the
// end-to-end tests) read the verification token.
//
// The package only transports plain-text messages. Composing the verification
// mail and parsing tokens out of it belong to the caller, which also owns the
// Sender interface that SMTPSender and OutboxSender satisfy.
//
// Subpackage mailtest runs an in-process SMTP server for tests.
package mail
