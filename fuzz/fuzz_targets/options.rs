//! Options by name (Node.js's `run({...})`, a fleet agent's spec): any JSON object is read
//! into a spec or refused with one line of the kind it is, and a spec read back through its
//! inverse reads again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pelt_load::options;

fuzz_target!(|data: &[u8]| {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(data) else {
        return;
    };
    // Files named by options are read only by `prepare`, never here; inlining reads them.
    let names_a_file = ["bodyFile", "targets", "bodies"].iter().any(|k| map.get(*k).is_some_and(|v| v.is_string()));
    match options::spec(&map) {
        Ok(spec) if !names_a_file => {
            if let Ok(again) = options::inline(&spec, None) {
                options::spec(&again).expect("a spec's own options read back");
            }
        }
        Ok(_) => {}
        Err(e) => assert!(!e.message.contains('\n') && e.message.len() < 4096, "{e}"),
    }
    let _ = options::serve(&map);
});
