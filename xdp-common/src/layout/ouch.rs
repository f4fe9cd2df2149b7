//! OUCH 5.0 layouts: filled by the OUCH work.
