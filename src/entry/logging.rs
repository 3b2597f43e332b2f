//! `tracing` set-up: compact progress on stderr for the CLI, JSON for Lambda when
//! `AWS_LAMBDA_LOG_FORMAT=JSON`.

use tracing_subscriber::filter::{LevelFilter, Targets};

/// Levels per target from `RUST_LOG` (`target=level,...,level`), else `default`. `Targets`
/// rather than `EnvFilter`: the same directives without span and field filters, and without
/// the regex engine those need in the bootstraps.
fn filter(default: &str) -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|directives| directives.parse().ok())
        .unwrap_or_else(|| default.parse().unwrap_or_default())
}

/// Says so when `RUST_LOG` is set but not `target=level` directives (the default levels are
/// used then); called once a subscriber is installed, so the warning is seen.
fn warn_on_unreadable_rust_log() {
    if let Ok(directives) = std::env::var("RUST_LOG") {
        if let Err(error) = directives.parse::<Targets>() {
            tracing::warn!(
                rust_log = %directives,
                %error,
                "RUST_LOG not understood (expected `target=level,...,level`, e.g. `bounded_rag=debug,warn`); using the default levels"
            );
        }
    }
}

/// [`filter`] for the log layers: never the export-only spans ([`crate::spans`]).
fn log_filter(default: &str) -> Targets {
    filter(default).with_target(crate::spans::TARGET, LevelFilter::OFF)
}

/// [`filter`] for the export layer: the export-only spans at `INFO` whatever the log level.
fn export_filter(default: &str) -> Targets {
    filter(default).with_target(crate::spans::TARGET, LevelFilter::INFO)
}

/// CLI logging: one short line per step and per retry on stderr; `quiet` keeps warnings only.
pub fn init_cli(quiet: bool) {
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = cli_subscriber(quiet).try_init();
    warn_on_unreadable_rust_log();
}

/// The subscriber [`init_cli`] installs (the CLI never exports spans).
pub fn cli_subscriber(quiet: bool) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::layer::SubscriberExt;
    let default = if quiet {
        "warn"
    } else {
        "bounded_rag=info,warn"
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .compact()
        .finish()
        .with(log_filter(default))
}

/// Lambda logging: JSON lines (with the current span's fields, `run_id` among them) when
/// `AWS_LAMBDA_LOG_FORMAT=JSON`, plain text otherwise; level from `RUST_LOG` or
/// `AWS_LAMBDA_LOG_LEVEL`. With `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans are also exported
/// ([`crate::otlp`]; `OTEL_SERVICE_NAME`, else the function's name, names the service).
pub fn init_lambda() {
    use tracing_subscriber::util::SubscriberInitExt;
    let otlp = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .map(|endpoint| {
            let service = std::env::var("OTEL_SERVICE_NAME")
                .or_else(|_| std::env::var("AWS_LAMBDA_FUNCTION_NAME"))
                .unwrap_or_else(|_| "bounded-rag".to_owned());
            let (exporter, layer) = crate::otlp::Exporter::new(&endpoint, &service);
            crate::otlp::install(exporter);
            layer
        });
    let _ = lambda_subscriber(otlp).try_init();
    warn_on_unreadable_rust_log();
}

/// The subscriber [`init_lambda`] installs, with `otlp` as its export layer (`None`: tracing
/// off). Public so that the bench suite measures the subscriber the functions run with.
pub fn lambda_subscriber(
    otlp: Option<crate::otlp::OtlpLayer>,
) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    use tracing_subscriber::Registry;
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .map(|l| l.to_lowercase())
        .unwrap_or_else(|_| "info".to_owned());
    let default = format!("bounded_rag={level},warn");
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time();
    // Only the layers in use, each with its own filter: an absent layer (`Option::None`) would
    // declare interest in every call site, and the export-only spans would then be built for
    // nobody.
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![if json {
        log.json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_filter(log_filter(&default))
            .boxed()
    } else {
        log.with_ansi(false)
            .with_filter(log_filter(&default))
            .boxed()
    }];
    if let Some(otlp) = otlp {
        layers.push(otlp.with_filter(export_filter(&default)).boxed());
    }
    tracing_subscriber::registry().with(layers)
}
