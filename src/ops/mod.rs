//! The operator's commands on a data folder, run instead of the server (its lock keeps
//! a server out meanwhile): `hearth realm create` (`realm`), `hearth backup` and
//! `hearth restore` (`backup`), `hearth check` (`check`), `hearth recover
//! --accept-loss` (`recover`), `hearth realm export/import` (`archive`), and, against
//! running nodes' admin listeners, `hearth realm move` (`moving`). They stand beside start-up: they open the data folder as
//! it does (`startup::open_data_folder`) and answer its errors (`StartError`).

pub mod archive;
pub mod backup;
pub mod check;
pub mod cluster;
pub mod moving;
pub mod realm;
pub mod recover;
mod scratch;

pub use check::{check_command, CheckArgs};
pub use realm::create_production_realm;
pub use recover::{recover_command, RecoverArgs};
