use bounded_rag::retrieval::{KnowledgeBase, RetrievalOptions};
use std::time::Instant;
fn main() {
    let t = Instant::now();
    let kb = KnowledgeBase::embedded().unwrap();
    let build = t.elapsed();
    let mut times = vec![];
    for _ in 0..20 {
        let t = Instant::now();
        let _k = KnowledgeBase::embedded().unwrap();
        times.push(t.elapsed());
    }
    times.sort();
    eprintln!(
        "first build {:?}, median of 20 rebuilds {:?}, min {:?}, max {:?}; stats {}",
        build,
        times[10],
        times[0],
        times[19],
        kb.stats()
    );
    let all = RetrievalOptions {
        limit: 8,
        nodes: true,
        edges: true,
        episodes: true,
        communities: true,
    };
    for q in std::env::args().skip(1) {
        let t = Instant::now();
        let hits = kb.search(&q, &all).unwrap();
        eprintln!("\n== {q} ({:?})", t.elapsed());
        for h in hits {
            eprintln!("{:6.2} {:?} {} | {}", h.score, h.kind, h.url, h.title);
        }
    }
}
