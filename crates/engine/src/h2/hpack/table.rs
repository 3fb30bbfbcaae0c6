//! The static table (RFC 7541 Appendix A) and the dynamic table (§2.3.2).
