//! A collector that lets only the allowed corpus positions reach the collector it wraps, so a
//! filtered BM25 search ranks the allowed documents only and its top k is full whenever k of
//! them match. Every index has one segment whose doc ids are corpus positions, so the
//! allowed set is consulted by doc id directly.
use crate::search::allowed::Allowed;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

/// `inner`, fed only the documents in `allowed`.
pub(crate) struct Only<C> {
    pub inner: C,
    pub allowed: Allowed,
}

/// The per-segment side of [`Only`].
pub(crate) struct OnlySegment<S> {
    inner: S,
    allowed: Allowed,
}

impl<C: Collector> Collector for Only<C> {
    type Fruit = C::Fruit;
    type Child = OnlySegment<C::Child>;

    fn for_segment(
        &self,
        segment_local_id: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        Ok(OnlySegment {
            inner: self.inner.for_segment(segment_local_id, segment)?,
            allowed: self.allowed.clone(),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    fn merge_fruits(
        &self,
        segment_fruits: Vec<<Self::Child as SegmentCollector>::Fruit>,
    ) -> tantivy::Result<Self::Fruit> {
        self.inner.merge_fruits(segment_fruits)
    }
}

impl<S: SegmentCollector> SegmentCollector for OnlySegment<S> {
    type Fruit = S::Fruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        if self.allowed.contains(doc) {
            self.inner.collect(doc, score);
        }
    }

    fn harvest(self) -> Self::Fruit {
        self.inner.harvest()
    }
}
