//! hearth's tools, beside the server (they use it as a library, and run its binary):
//!
//! - `load/`: `hearth load`, simulated Zulip clients against a server, and
//!   `hearth realm populate`, the simulated users it drives;
//! - `torture.rs`: `hearth torture`, the crash torture suite;
//! - `powercut/`: the page-cache-dropping test filesystem under `hearth torture
//!   --power-cut`, and `hearth-tools lazyfs`, the same mounted by hand.
//!
//! The `hearth-tools` executable runs them; `hearth load ...`, `hearth torture ...` and
//! `hearth realm populate ...` run it with the same arguments.

pub mod load;
pub mod powercut;
pub mod torture;
