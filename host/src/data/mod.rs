//! Data access: the datasets, the stores behind them, and the structured query capability
//! plugins use. Owns SQL; plugins never see it.

pub mod catalog;
