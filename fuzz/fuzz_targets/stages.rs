//! `--stages`: no input panics; what parses makes a schedule (or a one-line refusal) for the
//! rate and for the connections, and the schedule's targets stay within the stages'.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_engine::{Ramped, Stages};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(stages) = pelt_load::values::stages(s) else {
        return;
    };
    assert!(!stages.is_empty());
    for (of, start) in [(Ramped::Rate, 100.0), (Ramped::Connections, 0.0)] {
        if let Ok(sched) = Stages::new(of, start, stages.clone()) {
            let peak = stages.iter().map(|st| st.target).fold(start, f64::max);
            assert!(sched.peak() <= peak);
        }
    }
});
