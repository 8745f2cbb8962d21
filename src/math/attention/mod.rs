pub mod deterministic;
pub mod lln;
pub mod randomized;
pub mod tensorised;
