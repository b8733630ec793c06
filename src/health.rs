//! The storage's health as the HTTP layer sees it: a port, below every layer that
//! implements it (storage) or reads it (the HTTP layer).

/// What the HTTP layer reads of the storage's health (`/health/ready`, the metrics):
/// implemented by the storage's flusher (`storage::Durability`).
pub trait StoreHealth: Send + Sync {
    /// `Ok`, or why writes are refused: a storage fault not recovered yet.
    fn writable(&self) -> Result<(), String>;
    /// Why the message database cannot be read, if it failed (not while it is still
    /// opening: reads then wait for it).
    fn messages_failed(&self) -> Option<String>;
    /// Whether a storage fault stands (the failure gauge).
    fn failed(&self) -> bool;
}
