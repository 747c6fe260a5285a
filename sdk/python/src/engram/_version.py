# The SDK is versioned with the server: this is the release of engram it
# belongs to (the repository's VERSION file, stamped by `make sdk-version`; a test
# checks they agree).
__version__ = "0.1.0"
