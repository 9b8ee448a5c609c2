//! Configuration rules that need no file system.
