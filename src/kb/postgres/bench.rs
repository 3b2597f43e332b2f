//! Figures for BENCHMARKS.md "PostgreSQL store" (ignored: run by scripts/bench-postgres.sh
//! against the PostgreSQL of scripts/pg.sh; they print and assert nothing about time).
//!
//! A synthetic corpus: words drawn from a 30,000-word vocabulary with Zipf frequencies (as
//! in real text, a few words everywhere and most rare), 60-word passages, 100 tenants in the
//! metadata. Written through the same path as `ingest --out postgres://` ([`write`]), searched
//! through [`PgKnowledge`] as the workflow does.
//!
//! Vectors: uniformly random unit vectors, or, with `BENCH_VECTORS=DIR` (written by
//! `eval/real_vectors.py`), real-shaped ones: each passage's vector is a mix of two real
//! passage embeddings plus a little noise (real text's embeddings crowd into a narrow cone with
//! clusters, which is what an HNSW graph is built for; uniform vectors have neither), and the
//! measured queries are real questions' embeddings.
use super::direct::DirectSql;
use super::sql::{Sql as _, SqlValue};
use super::write::{self, Item};
use super::{schema, PgKnowledge};
use crate::kb::Retriever;
use crate::knowledge::EmbeddingInfo;
use crate::knowledge::Meta;
use crate::knowledge::{DocKind, Document};
use crate::search::{Filter, RetrievalOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

const VOCABULARY: usize = 30_000;
const WORDS_PER_PASSAGE: usize = 60;
const PASSAGES_PER_DOCUMENT: usize = 500;
const QUERIES: usize = 200;

fn word(i: usize) -> String {
    // Pronounceable, distinct, and not English stop words.
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ru", "ten", "sha", "vo", "pel", "dri", "nok", "zu", "fa", "gim", "ber",
        "tos", "quel",
    ];
    let mut n = i + 16;
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYL[n % 16]);
        n /= 16;
    }
    w
}

/// A word index with Zipf(1) frequencies (inverse transform on the harmonic CDF).
fn zipf(rng: &mut StdRng, cdf: &[f64]) -> usize {
    let x: f64 = rng.random();
    cdf.partition_point(|c| *c < x).min(cdf.len() - 1)
}

fn cdf() -> Vec<f64> {
    let h: f64 = (1..=VOCABULARY).map(|k| 1.0 / k as f64).sum();
    let mut acc = 0.0;
    (1..=VOCABULARY)
        .map(|k| {
            acc += 1.0 / k as f64 / h;
            acc
        })
        .collect()
}

fn text(rng: &mut StdRng, cdf: &[f64], words: usize) -> String {
    (0..words)
        .map(|_| word(zipf(rng, cdf)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn unit(rng: &mut StdRng, dims: usize) -> Vec<f32> {
    normalised((0..dims).map(|_| rng.random::<f32>() - 0.5).collect())
}

/// Real embeddings (`BENCH_VECTORS`): passages to mix from, questions to ask with.
struct Real {
    passages: Vec<Vec<f32>>,
    queries: Vec<Vec<f32>>,
}

impl Real {
    fn load(dir: &str, dims: usize) -> Self {
        let read = |name: &str| -> Vec<Vec<f32>> {
            let bytes = std::fs::read(format!("{dir}/{name}")).expect("BENCH_VECTORS file");
            assert_eq!(
                bytes.len() % (dims * 4),
                0,
                "{name} holds rows of {dims} f32"
            );
            bytes
                .chunks_exact(dims * 4)
                .map(|row| {
                    row.chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect()
                })
                .collect()
        };
        Self {
            passages: read("passages.f32"),
            queries: read("queries.f32"),
        }
    }

    /// A passage's vector: one real passage, half of another, and noise of a quarter of a
    /// unit's length, normalised.
    fn passage(&self, rng: &mut StdRng) -> Vec<f32> {
        let a = &self.passages[rng.random_range(0..self.passages.len())];
        let b = &self.passages[rng.random_range(0..self.passages.len())];
        let noise = unit(rng, a.len());
        normalised(
            a.iter()
                .zip(b)
                .zip(noise)
                .map(|((x, y), n)| x + 0.5 * y + 0.25 * n)
                .collect(),
        )
    }

    /// The `q`th query: a real question's embedding, or (`warm`) one with noise, for the
    /// unmeasured pass.
    fn query(&self, rng: &mut StdRng, q: usize, warm: bool) -> Vec<f32> {
        let v = &self.queries[q % self.queries.len()];
        if !warm {
            return v.clone();
        }
        let noise = unit(rng, v.len());
        normalised(v.iter().zip(noise).map(|(x, n)| x + 0.25 * n).collect())
    }
}

fn normalised(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

async fn run(passages: usize, dims: Option<usize>) {
    let url = std::env::var("BOUNDED_RAG_PG_URL").expect("BOUNDED_RAG_PG_URL");
    let config: tokio_postgres::Config = url.parse().unwrap();
    let sql = Arc::new(DirectSql::new(
        config,
        super::tls::connector(crate::config::PgTls::Disable, None).unwrap(),
        Duration::from_secs(600),
    ));
    let info = dims.map(|d| EmbeddingInfo {
        provider: "openai".into(),
        model: "random".into(),
        dimensions: d,
        quantization: "none".into(),
        query_prefix: String::new(),
        passage_prefix: String::new(),
    });
    // The tenant column holds the `tenant` key (BENCH_TENANT_KEY= empty: none, the metadata's
    // GIN index serves the filter).
    let tenant_key = std::env::var("BENCH_TENANT_KEY").unwrap_or_else(|_| "tenant".into());
    let tenant_key = Some(tenant_key.as_str()).filter(|k| !k.is_empty());
    let real = match (std::env::var("BENCH_VECTORS"), dims) {
        (Ok(dir), Some(d)) => Some(Real::load(&dir, d)),
        _ => None,
    };
    schema::ensure(sql.as_ref(), info.as_ref(), tenant_key)
        .await
        .unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let cdf = cdf();
    let started = Instant::now();
    // BENCH_REUSE=1: search what an earlier run wrote (the same seed wrote the same rows).
    let mut written = if std::env::var("BENCH_REUSE").is_ok() {
        let rows = sql
            .query(&super::sql::Statement::new(
                "SELECT CAST(count(*) AS int8) FROM bounded_rag_passages",
                vec![],
            ))
            .await
            .unwrap();
        rows[0][0].int().unwrap() as usize
    } else {
        0
    };
    let mut doc_no = 0;
    while written < passages {
        let n = PASSAGES_PER_DOCUMENT.min(passages - written);
        let path = format!("docs/{doc_no:06}.md");
        let docs: Vec<Document> = (0..n)
            .map(|i| Document {
                id: format!("{path}#{}", i + 1),
                title: text(&mut rng, &cdf, 4),
                url: format!("kb://{path}#{}", i + 1),
                content: text(&mut rng, &cdf, WORDS_PER_PASSAGE),
                score: 0.0,
                kind: DocKind::Episode,
                clear_match: false,
                from_graph: false,
                vector_rank: None,
            })
            .collect();
        let mut meta = Meta::new();
        meta.insert("tenant".into(), format!("t{}", doc_no % 100).into());
        let vectors: Vec<Vec<f32>> = match dims {
            Some(d) => (0..n)
                .map(|_| match &real {
                    Some(real) => real.passage(&mut rng),
                    None => unit(&mut rng, d),
                })
                .collect(),
            None => Vec::new(),
        };
        let items: Vec<Item<'_>> = docs
            .iter()
            .enumerate()
            .map(|(i, doc)| Item {
                doc,
                meta: Some(&meta),
                vector: vectors.get(i).map(Vec::as_slice),
            })
            .collect();
        write::write_document(sql.as_ref(), &path, &items)
            .await
            .unwrap();
        written += n;
        doc_no += 1;
    }
    // BENCH_PHASES: `exact` (the pinned searches without tenant indexes), `indexed` (with
    // them), or both (default, in that order).
    let phases = std::env::var("BENCH_PHASES").unwrap_or_else(|_| "exact indexed".into());
    let rows = std::env::var("BENCH_TENANT_INDEX_ROWS")
        .map_or(crate::config::DEFAULT_TENANT_INDEX_ROWS, |v| {
            v.parse().unwrap()
        });
    // First without tenant indexes, unless only `indexed` is asked for (their build is
    // then a no-op on reused rows).
    let first = if phases.contains("exact") { 0 } else { rows };
    write::restate(sql.as_ref(), first).await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    if doc_no == 0 {
        println!("searching the {passages} passages an earlier run wrote");
    } else {
        println!(
            "wrote {passages} passages{} in {seconds:.1} s: {:.0} rows/s",
            dims.map(|d| format!(
                " with {d}-dimension vectors{}",
                if real.is_some() { " (real-shaped)" } else { "" }
            ))
            .unwrap_or_default(),
            passages as f64 / seconds
        );
    }
    // A database that has settled: autovacuum would do this soon after a large load; done
    // here so that it does not run during the measured queries.
    sql.query(&super::sql::Statement::new(
        "VACUUM (ANALYZE) bounded_rag_passages",
        vec![],
    ))
    .await
    .unwrap();
    let opened = Instant::now();
    let kb = PgKnowledge::open(sql.clone()).await.unwrap();
    println!(
        "open (schema row read): {:.1} ms",
        opened.elapsed().as_secs_f64() * 1000.0
    );
    let search = Search {
        kb: &kb,
        sql: sql.as_ref(),
        cdf: &cdf,
        dims,
        real: real.as_ref(),
        passages,
        tenant_key,
    };
    // Warm passes of other queries first, unmeasured: the figures are of a warm database (its
    // pages in memory, as on a server that has been answering), not of the first reads.
    // BENCH_WARM: how many warm passes of 200 (default 1).
    let warm: usize = std::env::var("BENCH_WARM").map_or(1, |v| v.parse().unwrap());
    if phases.contains("exact") || dims.is_none() {
        for _ in 0..warm {
            search.pass(false, true, None).await;
        }
        search.pass(false, true, Some("unfiltered")).await;
        if dims.is_some() {
            search
                .pass(false, false, Some("unfiltered, full text alone"))
                .await;
        }
        search.pass(true, true, Some("with a tenant filter")).await;
    }
    if dims.is_none() || !phases.contains("indexed") {
        return;
    }
    // Then with each tenant's own index (every tenant of this corpus holds the same rows).
    let built = Instant::now();
    write::restate(sql.as_ref(), rows).await.unwrap();
    println!(
        "restate with tenant indexes from {rows} rows: {:.1} s",
        built.elapsed().as_secs_f64()
    );
    // Building the tenants' indexes reads the whole table once per tenant: the buffers warm
    // again before the figures.
    for _ in 0..warm {
        search.pass(true, true, None).await;
        search.pass(false, true, None).await;
    }
    search
        .pass(
            true,
            true,
            Some("with a tenant filter, the tenant's own index"),
        )
        .await;
    search
        .pass(false, true, Some("unfiltered, beside the tenant indexes"))
        .await;
    search
        .pass(false, false, Some("unfiltered, full text alone"))
        .await;
}

/// The searches of one bench.
struct Search<'a> {
    kb: &'a PgKnowledge,
    sql: &'a DirectSql,
    cdf: &'a [f64],
    dims: Option<usize>,
    real: Option<&'a Real>,
    passages: usize,
    tenant_key: Option<&'a str>,
}

impl Search<'_> {
    /// [`QUERIES`] searches, unfiltered or each pinned to a tenant; prints their figures when
    /// `measured` names them (the queries' own draws are seeded by it, the same at every run).
    /// `vectors` false: full text alone, on a store with vectors.
    async fn pass(&self, filtered: bool, vectors: bool, measured: Option<&str>) {
        let mut rng = StdRng::seed_from_u64(8 + u64::from(measured.is_some()));
        let mut times = Vec::with_capacity(QUERIES);
        let mut found = 0;
        for q in 0..QUERIES {
            // Questions of 4 content words, as in the eval sets, with a common one among them.
            let query = format!(
                "{} {} {} {}",
                word(zipf(&mut rng, self.cdf)),
                word(zipf(&mut rng, self.cdf) + 50),
                word(zipf(&mut rng, self.cdf) + 500),
                word(zipf(&mut rng, self.cdf) + 2000)
            );
            let options = RetrievalOptions {
                limit: 5,
                filter: filtered.then(|| Filter::equals("tenant", format!("t{}", q % 100))),
                ..RetrievalOptions::default()
            };
            let vector = self.dims.filter(|_| vectors).map(|d| match self.real {
                Some(real) => real.query(&mut rng, q, measured.is_none()),
                None => unit(&mut rng, d),
            });
            if q == 0 && measured.is_some() {
                if let Some(v) = &vector {
                    self.explain(&query, v, &options).await;
                }
            }
            let t = Instant::now();
            let docs = match &vector {
                Some(v) => self.kb.retrieve_hybrid(&query, v, &options).await.unwrap(),
                None => self.kb.retrieve(&query, &options).await.unwrap(),
            };
            times.push(t.elapsed());
            if t.elapsed() > Duration::from_millis(500) {
                println!(
                    "slow ({:.0} ms): {query}",
                    t.elapsed().as_secs_f64() * 1000.0
                );
            }
            found += docs.len();
        }
        let Some(what) = measured else { return };
        times.sort();
        println!(
            "{} query {what}, {} passages: p50 {:.1} ms, p99 {:.1} ms, {:.1} results on average",
            if self.dims.is_some() && vectors {
                "hybrid"
            } else {
                "full-text"
            },
            self.passages,
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            found as f64 / QUERIES as f64
        );
    }

    /// Prints the vector half's plan of one search: which index serves it.
    async fn explain(&self, query: &str, vector: &[f32], options: &RetrievalOptions) {
        let mut statement = super::query::hybrid(query, vector, options, 50, self.tenant_key);
        statement.sql = format!("EXPLAIN {}", statement.sql);
        let rows = self.sql.query(&statement).await.unwrap();
        for row in rows {
            let line = row.first().and_then(SqlValue::text).unwrap_or_default();
            if line.contains("Scan") || line.contains("One-Time Filter") {
                println!("  plan: {}", line.trim());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: prints figures for BENCHMARKS.md (scripts/bench-postgres.sh)"]
async fn full_text_at_scale() {
    let passages = std::env::var("BENCH_PASSAGES").map_or(1_000_000, |v| v.parse().unwrap());
    run(passages, None).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: prints figures for BENCHMARKS.md (scripts/bench-postgres.sh)"]
async fn hybrid_at_scale() {
    let passages = std::env::var("BENCH_PASSAGES").map_or(100_000, |v| v.parse().unwrap());
    let dims = std::env::var("BENCH_DIMS").map_or(384, |v| v.parse().unwrap());
    run(passages, Some(dims)).await;
}
