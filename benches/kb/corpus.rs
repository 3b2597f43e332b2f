//! A generated corpus for the knowledge-base benchmark, and the deterministic 384-dimension
//! embedding its local embeddings server answers with.
//!
//! Words come from a synthetic vocabulary with a Zipf-like (log-uniform rank) frequency, so
//! BM25 sees realistic term statistics: a few very common words, a long tail of rare ones.
//! Every file is a `# Title` and sections of about 100 words under `## Heading`s, so each
//! section is one passage. A word's vector is pseudo-random from its rank; a text's vector is
//! the sum of its words' vectors, so texts that share words are similar.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;

/// Dimensions of the embedding (the size of all-MiniLM-L6-v2 and bge-small).
pub const DIMS: usize = 384;
/// Words in the vocabulary.
const VOCABULARY: usize = 30_000;
/// Sections (passages) per file.
const SECTIONS_PER_FILE: usize = 100;
/// Words per section body.
const WORDS_PER_SECTION: usize = 100;

/// The vocabulary and the vector of every word.
pub struct Words {
    pub words: Vec<String>,
    vectors: Vec<[f32; DIMS]>,
}

impl Words {
    pub fn new() -> Self {
        const SYLLABLES: &[&str] = &[
            "ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "de", "ma", "pe", "li", "to", "ga",
            "zu", "be", "ro", "fa", "ni", "ko", "sh", "tra", "mel", "dor", "qui", "len", "bar",
            "pol", "ster", "wen", "cal", "mon", "rix", "tal", "ven", "gor",
        ];
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::with_capacity(VOCABULARY);
        while words.len() < VOCABULARY {
            let n = rng.random_range(2..=4);
            let word: String = (0..n)
                .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                .collect();
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let vectors = (0..VOCABULARY)
            .map(|_| std::array::from_fn(|_| rng.random_range(-1.0f32..1.0)))
            .collect();
        Self { words, vectors }
    }

    /// A word rank, log-uniform: rank r is about 1/r as frequent as rank 1.
    pub fn sample(&self, rng: &mut impl Rng) -> usize {
        let u: f64 = rng.random();
        let r = ((VOCABULARY as f64 + 1.0).ln() * u).exp() as usize;
        r.saturating_sub(1).min(VOCABULARY - 1)
    }

    /// A word of the middle of the distribution (a good query word).
    pub fn query_word(&self, rng: &mut impl Rng) -> &str {
        &self.words[rng.random_range(200..5_000)]
    }

    /// The embedding of `text`: the sum of its known words' vectors.
    pub fn embed(&self, index: &std::collections::HashMap<&str, usize>, text: &str) -> Vec<f32> {
        let mut v = [0.0f32; DIMS];
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if let Some(&i) = index.get(word) {
                for (a, b) in v.iter_mut().zip(&self.vectors[i]) {
                    *a += b;
                }
            }
        }
        if v.iter().all(|x| *x == 0.0) {
            v[0] = 1.0;
        }
        v.to_vec()
    }

    /// Word to rank.
    pub fn index(&self) -> std::collections::HashMap<&str, usize> {
        self.words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.as_str(), i))
            .collect()
    }
}

/// Writes `passages` passages (rounded up to whole files) of Markdown under `dir`.
pub fn write(dir: &Path, words: &Words, passages: usize) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let files = passages.div_ceil(SECTIONS_PER_FILE);
    let mut rng = StdRng::seed_from_u64(11);
    for f in 0..files {
        let mut text = format!(
            "# Report {f} on {}\n\n",
            words.words[words.sample(&mut rng)]
        );
        for s in 0..SECTIONS_PER_FILE {
            let a = &words.words[words.sample(&mut rng)];
            let b = &words.words[words.sample(&mut rng)];
            text.push_str(&format!("## Section {s}: {a} {b}\n\n"));
            for w in 0..WORDS_PER_SECTION {
                text.push_str(&words.words[words.sample(&mut rng)]);
                text.push_str(if w % 12 == 11 { ". " } else { " " });
            }
            text.push_str(".\n\n");
        }
        std::fs::write(dir.join(format!("report-{f:05}.md")), text)?;
    }
    Ok(files)
}
