//! Size classes added over threads, some of which may answer nothing (a thread's classes are
//! empty until its first answer): every class keeps its counts and percentiles.

mod plain;

use std::time::Duration;

use httpbench_engine::spec::Stop;
use httpbench_engine::LoadSpec;

#[test]
fn threads_add_up_into_every_class_with_its_percentiles() {
    let (base, _) = plain::serve(Duration::ZERO);
    // As many threads as requests (the engine refuses fewer requests than connections): a
    // thread's budget claim may leave others none. Every answer is 7 bytes.
    let r = plain::run(LoadSpec {
        urls: vec![format!("{base}/")],
        connections: 8,
        threads: 8,
        size_classes: vec![5, 100],
        stop: Stop::Requests(8),
        ..LoadSpec::default()
    });
    assert_eq!(r.requests.completed, 8, "{:?}", r.requests);
    let counts: Vec<(u64, u64, u64)> = (r.classes.iter())
        .map(|c| (c.requests, c.bytes, c.latency.count))
        .collect();
    assert_eq!(counts, [(0, 0, 0), (8, 56, 8), (0, 0, 0)]);
    let class = &r.classes[1].latency;
    assert!(!class.hdr.is_empty() && class.p50_us > 0 && class.p99_us >= class.p50_us);
    assert_eq!(class.p99_us, r.latency.total.p99_us);
}
