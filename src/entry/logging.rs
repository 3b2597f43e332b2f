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

/// [`filter`] for the recorder of the GenAI metrics when no span is exported: the model and
/// embeddings calls' spans only.
fn metrics_filter() -> Targets {
    Targets::new().with_target(crate::genai::TARGET, LevelFilter::INFO)
}

/// The export settings the environment gives ([`crate::otlp::ExportSettings::from_env`]).
fn export_settings(default_service: &str) -> Option<crate::otlp::ExportSettings> {
    crate::otlp::ExportSettings::from_env(|name| std::env::var(name).ok(), default_service)
}

/// CLI logging: one short line per step and per retry on stderr; `quiet` keeps warnings only.
/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the command's spans are exported when it ends, as
/// the functions export theirs ([`crate::otlp`]).
pub fn init_cli(quiet: bool) {
    use tracing_subscriber::util::SubscriberInitExt;
    let otlp = export_settings("bounded-rag-cli").map(|settings| {
        let (exporter, layer) = crate::otlp::Exporter::with_settings(Some(settings));
        crate::otlp::install(exporter, false);
        layer
    });
    let _ = cli_subscriber(quiet, otlp).try_init();
    warn_on_unreadable_rust_log();
}

/// The subscriber [`init_cli`] installs, with `otlp` as its export layer (`None`: no export).
pub fn cli_subscriber(
    quiet: bool,
    otlp: Option<crate::otlp::OtlpLayer>,
) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    let default = if quiet {
        "warn"
    } else {
        "bounded_rag=info,warn"
    };
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .compact()
        .with_filter(log_filter(default));
    let export = otlp.map(|layer| layer.with_filter(export_filter(default)));
    tracing_subscriber::registry().with(log).with(export)
}

/// Lambda logging: JSON lines (with the current span's fields, `run_id` among them) when
/// `AWS_LAMBDA_LOG_FORMAT=JSON`, plain text otherwise; level from `RUST_LOG` or
/// `AWS_LAMBDA_LOG_LEVEL`. The model and embeddings calls' spans are always recorded, for the
/// GenAI metrics each invocation prints ([`crate::otlp::metrics`]); with
/// `OTEL_EXPORTER_OTLP_ENDPOINT` set, every span is also exported ([`crate::otlp`];
/// `OTEL_SERVICE_NAME`, else the function's name, names the service).
pub fn init_lambda() {
    use tracing_subscriber::util::SubscriberInitExt;
    let service =
        std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "bounded-rag".to_owned());
    let settings = export_settings(&service);
    let exports = settings.is_some();
    let (exporter, layer) = crate::otlp::Exporter::with_settings(settings);
    crate::otlp::install(exporter, true);
    let _ = lambda_subscriber(Some(layer), exports).try_init();
    warn_on_unreadable_rust_log();
}

/// The subscriber [`init_lambda`] installs, with `otlp` as its recording layer (`None`: none),
/// which records every span when `exports`, else only the model and embeddings calls'. Public
/// so that the bench suite measures the subscriber the functions run with.
pub fn lambda_subscriber(
    otlp: Option<crate::otlp::OtlpLayer>,
    exports: bool,
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
        layers.push(match exports {
            true => otlp.with_filter(export_filter(&default)).boxed(),
            false => otlp.with_filter(metrics_filter()).boxed(),
        });
    }
    tracing_subscriber::registry().with(layers)
}
