//! Figures for BENCHMARKS.md "PostgreSQL store" (ignored: run by scripts/bench-postgres.sh
//! against the PostgreSQL of scripts/pg.sh; they print and assert nothing about time).
//!
//! A synthetic corpus: words drawn from a 30,000-word vocabulary with Zipf frequencies (as
//! in real text, a few words everywhere and most rare), 60-word passages, 100 tenants in the
//! metadata. Written through the same path as `ingest --out postgres://` ([`write`]), searched
//! through [`PgKnowledge`] as the workflow does.
use super::direct::DirectSql;
use super::sql::Sql as _;
use super::write::{self, Item};
use super::{schema, PgKnowledge};
use crate::kb::bundle::format::EmbeddingInfo;
use crate::kb::Retriever;
use crate::search::filter::Meta;
use crate::search::{DocKind, Document, Filter, RetrievalOptions};
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
    let v: Vec<f32> = (0..dims).map(|_| rng.random::<f32>() - 0.5).collect();
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
            })
            .collect();
        let mut meta = Meta::new();
        meta.insert("tenant".into(), format!("t{}", doc_no % 100).into());
        let vectors: Vec<Vec<f32>> = match dims {
            Some(d) => (0..n).map(|_| unit(&mut rng, d)).collect(),
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
    write::restate(sql.as_ref()).await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    if doc_no == 0 {
        println!("searching the {passages} passages an earlier run wrote");
    } else {
        println!(
            "wrote {passages} passages{} in {seconds:.1} s: {:.0} rows/s",
            dims.map(|d| format!(" with {d}-dimension vectors"))
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
    // The queries' own draws, the same whether the rows were written now or reused.
    let mut rng = StdRng::seed_from_u64(8);
    let opened = Instant::now();
    let kb = PgKnowledge::open(sql.clone()).await.unwrap();
    println!(
        "open (schema row read): {:.1} ms",
        opened.elapsed().as_secs_f64() * 1000.0
    );
    // A pass of other queries first, unmeasured: the figures are of a warm database (its
    // pages in memory, as on a server that has been answering), not of the first reads.
    for (filtered, measured) in [(false, false), (false, true), (true, true)] {
        let mut times = Vec::with_capacity(QUERIES);
        let mut found = 0;
        for q in 0..QUERIES {
            // Questions of 4 content words, as in the eval sets, with a common one among them.
            let query = format!(
                "{} {} {} {}",
                word(zipf(&mut rng, &cdf)),
                word(zipf(&mut rng, &cdf) + 50),
                word(zipf(&mut rng, &cdf) + 500),
                word(zipf(&mut rng, &cdf) + 2000)
            );
            let options = RetrievalOptions {
                limit: 5,
                filter: filtered.then(|| Filter::equals("tenant", format!("t{}", q % 100))),
                ..RetrievalOptions::default()
            };
            let vector = dims.map(|d| unit(&mut rng, d));
            let t = Instant::now();
            let docs = match &vector {
                Some(v) => kb.retrieve_hybrid(&query, v, &options).await.unwrap(),
                None => kb.retrieve(&query, &options).await.unwrap(),
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
        if !measured {
            continue;
        }
        times.sort();
        println!(
            "{} {} query over {passages}: p50 {:.1} ms, p99 {:.1} ms, {:.1} results on average",
            if dims.is_some() {
                "hybrid"
            } else {
                "full-text"
            },
            if filtered {
                "with a tenant filter"
            } else {
                "unfiltered"
            },
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            found as f64 / QUERIES as f64
        );
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
