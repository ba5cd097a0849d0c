//! Home of the trybuild suite that proves the macros' compile-time guarantees.
