//! `serve` (the local server and its playground, `entry/serve/`; with `--remote`, in front of
//! a deployed stack) and `graph` (the workflow graph as a diagram).

use super::output::fail;
use crate::entry::serve::remote::{Remote, SigningService};
use crate::entry::serve::Backend;
use crate::entry::App;
use crate::rag::{render_diagram, DiagramFormat as Format};
use clap::{Args, ValueEnum};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

/// `serve` arguments.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on (0: any free port; the URL printed names it).
    #[arg(long, default_value_t = 8080)]
    pub(crate) port: u16,
    /// Address to listen on. Loopback by default; anything else is reachable from other
    /// machines, without authentication.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub(crate) host: IpAddr,
    /// A deployed stack to watch instead: its HTTP API or function URL. Every API call of the
    /// page is sent there, signed with SigV4 from your AWS credentials (the default chain:
    /// AWS_PROFILE, AWS_ACCESS_KEY_ID...), which never reach the browser.
    #[arg(long, value_name = "URL")]
    pub(crate) remote: Option<String>,
    /// The service the remote's requests are signed for (default: read from the URL's host,
    /// else execute-api).
    #[arg(long, value_enum, requires = "remote")]
    pub(crate) remote_service: Option<SigningService>,
    /// The region the remote's requests are signed for (default: read from the URL's host,
    /// else the AWS configuration's).
    #[arg(long, requires = "remote")]
    pub(crate) remote_region: Option<String>,
}

/// A diagram format of `graph`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum GraphFormat {
    /// Mermaid (`flowchart`), which GitHub renders in Markdown.
    Mermaid,
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
}

/// Serves the API, the stream and the playground until Ctrl-C, with the clients `ask` uses;
/// with `--remote`, the playground in front of a deployed stack.
pub(crate) async fn serve_command(args: ServeArgs) -> ExitCode {
    let backend = match &args.remote {
        None => match App::from_env().await {
            Ok(app) => Backend::Local(app),
            Err(e) => return fail(2, &e.to_string()),
        },
        Some(url) => match Remote::from_env(url, args.remote_service, args.remote_region).await {
            Ok(remote) => Backend::Remote(remote),
            Err(e) => return fail(2, &e.to_string()),
        },
    };
    let addr = SocketAddr::new(args.host, args.port);
    match crate::entry::serve::serve(backend, addr).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(
            2,
            &format!("cannot listen on {addr}: {e}; try another --port"),
        ),
    }
}

/// Prints the workflow graph.
pub(crate) fn graph_command(format: GraphFormat) -> ExitCode {
    let format = match format {
        GraphFormat::Mermaid => Format::Mermaid,
        GraphFormat::Dot => Format::Dot,
    };
    print!("{}", render_diagram(format));
    ExitCode::SUCCESS
}
