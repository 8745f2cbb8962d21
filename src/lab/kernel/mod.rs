//! The seed paper's experiment: datasets of query/key pairs, every estimator on them, the
//! scatter, the boxplots and the MSE-against-m curve. [`tasks`] cuts it into seeded tasks the
//! workers share; [`experiment`] runs them on one thread (the command line); [`results`] is
//! what the page shows; [`data_view`] the data panel; [`export`] the JSON and CSV files.

pub mod data_view;
pub mod experiment;
pub mod export;
pub mod results;
pub mod tasks;
