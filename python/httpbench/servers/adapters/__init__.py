"""One module per server under test. Every `Server` subclass with a `name` defined in a module of
this package is an adapter; `httpbench.servers.ADAPTERS` finds them all."""
