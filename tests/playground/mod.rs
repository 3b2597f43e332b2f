//! Helpers of the `serve` and playground tests: `bounded-rag serve` as a child process, headless
//! Chromium through chromedriver, and a proxy that can cut a stream.
#![allow(dead_code)]

pub mod browser;
pub mod proxy;
pub mod server;
