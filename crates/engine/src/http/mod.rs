pub mod coding;
pub mod request;
pub mod response;
