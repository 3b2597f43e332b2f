//! Helpers of the `serve` and playground tests: `bounded-rag serve` as a child process, headless
//! Chromium through chromedriver, a proxy that can cut a stream, and a stand-in for a deployed
//! stack that checks SigV4 signatures.
#![allow(dead_code)]

pub mod browser;
pub mod page;
pub mod proxy;
pub mod server;
pub mod signing;
