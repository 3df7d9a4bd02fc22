"""The pure decision core: no I/O, no flask, no kubernetes client, no yaml."""
