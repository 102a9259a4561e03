//! lockscope exporter
