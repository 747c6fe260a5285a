// The package's version: the release of engram it belongs to (the
// repository's VERSION file, stamped by `make sdk-version`; a test checks
// that package.json, this constant and VERSION agree).
export const VERSION = "0.1.0";
