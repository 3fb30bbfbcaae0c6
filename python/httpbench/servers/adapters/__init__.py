"""One module per server under test, each a `Server` subclass with a `name`; servers.registry
lists them."""
