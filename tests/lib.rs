//! End-to-end tests live in `api/` (one test binary); this library is empty.
