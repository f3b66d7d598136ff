/**
 * Imported first by processes that run a LocalLogBus (embedded mode, its benchmarks). Every partition's group
 * commit (writev + fdatasync), segment creation and consumer offset commit (write, fsync, rename, fsync the
 * directory) runs on libuv's thread pool, which has 4 threads unless told otherwise; with 4 partitions per topic,
 * two topics and their consumers, fsyncs queued behind each other and every produce waited for the queue
 * (bench/capture.ts: `/i/v0/e/` 7,600 → 11,300 req/s with 16 threads). libuv reads the variable when the pool
 * first starts, so it is set before any module can use the pool; an operator's own value wins.
 */
process.env.UV_THREADPOOL_SIZE ??= '16';
