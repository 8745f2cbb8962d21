pub mod heads;
