//! The deployed stack `serve --remote URL` talks to: its base URL, and the service and region
//! its requests are signed for. The service and region are read from the host when it is an
//! API Gateway or function URL host (`ID.execute-api.REGION.amazonaws.com`,
//! `ID.lambda-url.REGION.on.aws`); an explicit `--remote-service` / `--remote-region` wins, and
//! the region otherwise comes from the AWS configuration (`AWS_REGION`, the profile's region).

use clap::ValueEnum;
use reqwest::Url;

/// The AWS service a request to the stack is signed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SigningService {
    /// An API Gateway HTTP API (`execute-api`).
    ExecuteApi,
    /// A Lambda function URL (`lambda`).
    Lambda,
}

impl SigningService {
    /// The name in the signature's credential scope.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SigningService::ExecuteApi => "execute-api",
            SigningService::Lambda => "lambda",
        }
    }
}

/// Why `--remote` cannot be used as given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum TargetError {
    /// Not a URL at all.
    #[error("--remote {0:?} is not a URL (e.g. https://abc123.lambda-url.eu-west-1.on.aws/)")]
    NotAUrl(String),
    /// A scheme other than https (http only to a loopback address, for tests).
    #[error(
        "--remote {0} must be https (signed requests over plain http only go to a loopback address)"
    )]
    NotHttps(String),
    /// A query string or fragment, which the page's own requests would have to replace.
    #[error("--remote {0} has a query string or fragment; give the stack's base URL only")]
    HasQuery(String),
    /// No region from the flag, the host or the AWS configuration.
    #[error(
        "no region to sign requests to {0} with: its host names none; pass --remote-region or \
         set AWS_REGION"
    )]
    NoRegion(String),
}

/// A deployed stack: where its API is and what its requests are signed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The base URL, its path (an API Gateway stage, say) without a trailing `/`.
    base: Url,
    service: SigningService,
    region: String,
}

impl Target {
    /// The stack at `url`. `service` and `region` are the explicit flags; `config_region` is
    /// the AWS configuration's region, used when neither the flag nor the host names one.
    pub(crate) fn new(
        url: &str,
        service: Option<SigningService>,
        region: Option<String>,
        config_region: Option<&str>,
    ) -> Result<Target, TargetError> {
        let mut base = Url::parse(url).map_err(|_| TargetError::NotAUrl(url.to_owned()))?;
        let host = base.host_str().unwrap_or_default().to_ascii_lowercase();
        let loopback = host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        match base.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => return Err(TargetError::NotHttps(url.to_owned())),
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(TargetError::HasQuery(url.to_owned()));
        }
        let path = base.path().trim_end_matches('/').to_owned();
        base.set_path(&path);
        let (host_service, host_region) = from_host(&host);
        let region = region
            .or(host_region)
            .or(config_region.map(str::to_owned))
            .filter(|r| !r.is_empty())
            .ok_or_else(|| TargetError::NoRegion(url.to_owned()))?;
        Ok(Target {
            base,
            // A custom domain name is API Gateway's far more often than a function URL's.
            service: service
                .or(host_service)
                .unwrap_or(SigningService::ExecuteApi),
            region,
        })
    }

    /// The stack's URL for a request to `path_and_query` (`/workflow/runs?limit=2`).
    pub(crate) fn url_of(&self, path_and_query: &str) -> String {
        let base = self.base.as_str().trim_end_matches('/');
        format!("{base}{path_and_query}")
    }

    /// The base URL as the user gave it (without a trailing `/`).
    pub(crate) fn url(&self) -> &str {
        self.base.as_str().trim_end_matches('/')
    }

    pub(crate) fn service(&self) -> SigningService {
        self.service
    }

    pub(crate) fn region(&self) -> &str {
        &self.region
    }
}

/// The service and region an AWS host names: `ID.execute-api.REGION.amazonaws.com[.cn]`,
/// `ID.lambda-url.REGION.on.aws`.
fn from_host(host: &str) -> (Option<SigningService>, Option<String>) {
    let labels: Vec<&str> = host.trim_end_matches('.').split('.').collect();
    let service = match labels.get(1) {
        Some(&"execute-api") => SigningService::ExecuteApi,
        Some(&"lambda-url") => SigningService::Lambda,
        _ => return (None, None),
    };
    let tail = labels.get(3..).unwrap_or_default();
    let aws = match service {
        SigningService::ExecuteApi => {
            tail == ["amazonaws", "com"] || tail == ["amazonaws", "com", "cn"]
        }
        SigningService::Lambda => tail == ["on", "aws"],
    };
    match labels.get(2) {
        Some(region) if aws && !region.is_empty() => (Some(service), Some((*region).to_owned())),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Result<Target, TargetError> {
        Target::new(url, None, None, Some("us-east-1"))
    }

    #[test]
    fn the_service_and_region_come_from_an_aws_host() {
        let url = target("https://abc123.lambda-url.eu-west-1.on.aws/").unwrap();
        assert_eq!(
            (url.service(), url.region()),
            (SigningService::Lambda, "eu-west-1")
        );
        assert_eq!(url.url(), "https://abc123.lambda-url.eu-west-1.on.aws");
        assert_eq!(
            url.url_of("/workflow/runs?limit=2"),
            "https://abc123.lambda-url.eu-west-1.on.aws/workflow/runs?limit=2"
        );
        let api = target("https://k2x.execute-api.ap-southeast-1.amazonaws.com/prod/").unwrap();
        assert_eq!(
            (api.service(), api.region()),
            (SigningService::ExecuteApi, "ap-southeast-1")
        );
        // The stage stays in front of every path.
        assert_eq!(
            api.url_of("/workflow/run"),
            "https://k2x.execute-api.ap-southeast-1.amazonaws.com/prod/workflow/run"
        );
    }

    #[test]
    fn flags_win_and_the_configuration_fills_in_the_region() {
        let custom = target("https://rag.example.com").unwrap();
        assert_eq!(
            (custom.service(), custom.region()),
            (SigningService::ExecuteApi, "us-east-1")
        );
        let flagged = Target::new(
            "https://abc123.lambda-url.eu-west-1.on.aws/",
            Some(SigningService::ExecuteApi),
            Some("eu-central-1".into()),
            Some("us-east-1"),
        )
        .unwrap();
        assert_eq!(
            (flagged.service(), flagged.region()),
            (SigningService::ExecuteApi, "eu-central-1")
        );
        assert_eq!(
            Target::new("https://rag.example.com", None, None, None),
            Err(TargetError::NoRegion("https://rag.example.com".into()))
        );
    }

    #[test]
    fn plain_http_goes_to_loopback_only_and_a_query_is_refused() {
        assert!(target("http://127.0.0.1:9000/").is_ok());
        assert!(target("http://localhost:9000").is_ok());
        assert_eq!(
            target("http://rag.example.com/"),
            Err(TargetError::NotHttps("http://rag.example.com/".into()))
        );
        assert_eq!(
            target("https://rag.example.com/?a=1"),
            Err(TargetError::HasQuery("https://rag.example.com/?a=1".into()))
        );
        assert_eq!(
            target("rag.example.com"),
            Err(TargetError::NotAUrl("rag.example.com".into()))
        );
        assert_eq!(
            from_host("abc.lambda-url.eu-west-1.example.com"),
            (None, None)
        );
    }
}
