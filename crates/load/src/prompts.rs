//! Prompt datasets (`--prompts`, `--input-tokens`, `--output-tokens`, `--model`): the requests
//! of an LLM serving benchmark, as `vllm bench serve`, AIPerf and GuideLLM send them — each an
//! OpenAI-style streaming request (a chat completion to a URL ending in `/chat/completions`, a
//! text completion otherwise) asking for `max_tokens` tokens and for the `usage` counts at its
//! end. They are read (or made) completely before any traffic and become the run's set of
//! requests, sent in `--order` as `--targets` entries are; every problem is one line naming the
//! file and the line.
//!
//! The prompts come from a file in the shapes those tools read: JSON lines with a `prompt`
//! (vLLM's custom dataset, GuideLLM), a `text` (AIPerf's single-turn) or `messages` (OpenAI's),
//! each with an optional `max_tokens` / `output_tokens` / `output_length` (AIPerf) /
//! `output_tokens_count` (GuideLLM); or a ShareGPT file
//! (a JSON array of `{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}`:
//! the first human turn is the prompt, the words of the reply after it its output length, as
//! vLLM's ShareGPT reader takes them). Or they are made: `--input-tokens 512,128` prompts of 384
//! to 640 words (uniformly, from `--seed`), and `--output-tokens` the `max_tokens` asked for.
//!
//! pelt has no tokenizer: a made prompt's "token" is a word, and a real model's tokenizer
//! counts differently; the tokens the result reports are the server's own (its `usage`).
//! Written here rather than taken from a crate: the formats are plain serde, and no Rust crate
//! reads these tools' datasets.

use crate::sources::TargetEntry;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Made prompts are at most this many in a run (fewer when they would be larger than
/// [`MADE_WORDS`] words together): requests past them send them again, in `--order`.
pub const MADE_PROMPTS: usize = 1000;
const MADE_WORDS: u64 = 8 << 20;
/// The longest made prompt, in words.
pub const MADE_LONGEST: u64 = 1 << 20;

/// A length and how far either way it may go (uniformly): `512,128` is 384 to 640.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    pub mean: u64,
    pub spread: u64,
}

impl Spread {
    /// `N` or `N,SPREAD`, each a whole number, the spread at most `N`.
    pub fn parse(text: &str) -> Result<Spread, String> {
        let (mean, spread) = match text.split_once(',') {
            Some((m, s)) => (m.trim(), s.trim()),
            None => (text.trim(), "0"),
        };
        let mean: u64 = mean
            .parse()
            .map_err(|_| format!("'{mean}' is not a count of tokens (a whole number)"))?;
        if spread.starts_with('-') {
            return Err(format!("the spread {spread} is negative: give 0 or more"));
        }
        let spread: u64 = spread
            .parse()
            .map_err(|_| format!("the spread '{spread}' is not a whole number"))?;
        if mean == 0 {
            return Err("a length of 0 tokens asks for nothing: give 1 or more".into());
        }
        if spread >= mean {
            return Err(format!(
                "the spread {spread} must be below the length {mean} (every length at least 1)"
            ));
        }
        Ok(Spread { mean, spread })
    }

    /// A draw from `rng`.
    fn draw(&self, rng: &mut Rng) -> u64 {
        if self.spread == 0 {
            return self.mean;
        }
        self.mean - self.spread + rng.below(2 * self.spread + 1)
    }

    /// A made prompt's length: as [`parse`](Self::parse), at most [`MADE_LONGEST`] words.
    pub fn parse_input(text: &str) -> Result<Spread, String> {
        let s = Spread::parse(text)?;
        if s.mean + s.spread > MADE_LONGEST {
            return Err(format!(
                "a made prompt is at most {MADE_LONGEST} words (tokens); {} asks for up to {}",
                s.text(),
                s.mean + s.spread
            ));
        }
        Ok(s)
    }

    pub fn text(&self) -> String {
        match self.spread {
            0 => self.mean.to_string(),
            s => format!("{},{s}", self.mean),
        }
    }
}

/// Where the prompts come from and what each request asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompts {
    /// A dataset file (`None`: made, `input` words each).
    pub file: Option<PathBuf>,
    /// Made prompts' length in words (`--input-tokens`).
    pub input: Option<Spread>,
    /// `max_tokens` for each request that does not say (`--output-tokens`).
    pub output: Option<Spread>,
    /// The `model` field (`--model`; absent: the server's own).
    pub model: Option<String>,
}

/// One prompt: a chat's messages or a completion's text, and the tokens to ask for.
struct Prompt {
    ask: Ask,
    max_tokens: Option<u64>,
    line: usize,
}

enum Ask {
    Text(String),
    Messages(Value),
}

impl Prompts {
    /// The requests, each a POST of its JSON to `url` (`seed`: the made prompts' and the
    /// lengths' draws). `Err` is one line.
    pub fn entries(&self, url: &str, seed: u64) -> Result<Vec<TargetEntry>, String> {
        let mut rng = Rng::new(seed);
        let prompts = match &self.file {
            Some(path) => {
                let text = crate::sources::read_input(path, "--prompts")?;
                read(&text, &path.display().to_string())?
            }
            None => {
                let input = self.input.ok_or(
                    "--output-tokens and --model shape the requests of --prompts FILE or \
                     --input-tokens N: give one",
                )?;
                made(input, &mut rng)
            }
        };
        let chat = url_path(url)
            .trim_end_matches('/')
            .ends_with("/chat/completions");
        Ok(prompts
            .into_iter()
            .map(|p| {
                let max_tokens = p
                    .max_tokens
                    .or_else(|| self.output.map(|o| o.draw(&mut rng)));
                TargetEntry {
                    method: Some("POST".into()),
                    url: url.to_string(),
                    headers: vec!["Content-Type: application/json".into()],
                    body: Some(self.body(p.ask, max_tokens, chat).into_bytes()),
                    line: p.line,
                    ..TargetEntry::default()
                }
            })
            .collect())
    }

    /// A request's JSON: OpenAI's chat or text completion, streamed, with usage at its end.
    fn body(&self, ask: Ask, max_tokens: Option<u64>, chat: bool) -> String {
        let mut v = serde_json::Map::new();
        if let Some(m) = &self.model {
            v.insert("model".into(), json!(m));
        }
        match (ask, chat) {
            (Ask::Messages(m), true) => v.insert("messages".into(), m),
            (Ask::Text(t), true) => {
                v.insert("messages".into(), json!([{"role": "user", "content": t}]))
            }
            (Ask::Text(t), false) => v.insert("prompt".into(), json!(t)),
            // A completion of a chat: its messages' contents, one after another.
            (Ask::Messages(m), false) => v.insert("prompt".into(), json!(contents(&m))),
        };
        if let Some(n) = max_tokens {
            v.insert("max_tokens".into(), json!(n));
        }
        v.insert("stream".into(), json!(true));
        v.insert("stream_options".into(), json!({"include_usage": true}));
        Value::Object(v).to_string()
    }
}

/// The path of `url` (what follows its authority, without the query).
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or("")
}

/// The text of a chat's messages, joined by newlines.
fn contents(messages: &Value) -> String {
    let texts =
        messages
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| match m.get("content")? {
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            });
    texts.collect::<Vec<_>>().join("\n")
}

/// A dataset file's prompts: a ShareGPT JSON array, or JSON lines.
fn read(text: &[u8], name: &str) -> Result<Vec<Prompt>, String> {
    let text =
        std::str::from_utf8(text).map_err(|e| format!("--prompts {name}: not UTF-8 ({e})"))?;
    let prompts = if text.trim_start().starts_with('[') {
        sharegpt(text, name)?
    } else {
        lines(text, name)?
    };
    if prompts.is_empty() {
        return Err(format!("--prompts {name}: no prompt in it"));
    }
    Ok(prompts)
}

/// JSON lines: `prompt`, `text` or `messages`, and optionally the tokens to ask for.
fn lines(text: &str, name: &str) -> Result<Vec<Prompt>, String> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let at = |what: String| format!("--prompts {name}: line {line}: {what}");
        let v: Value = serde_json::from_str(l).map_err(|e| at(format!("not JSON ({e})")))?;
        let ask = match (v.get("prompt"), v.get("text"), v.get("messages")) {
            (Some(Value::String(t)), _, _) | (None, Some(Value::String(t)), _) => {
                Ask::Text(t.clone())
            }
            (None, None, Some(m @ Value::Array(list))) if !list.is_empty() => {
                Ask::Messages(m.clone())
            }
            _ => {
                return Err(at(
                    "no prompt: give \"prompt\" or \"text\" (a string) or \"messages\" (a \
                     list of {\"role\", \"content\"})"
                        .into(),
                ))
            }
        };
        let mut max_tokens = None;
        for key in [
            "max_tokens",
            "output_tokens",
            "output_length",
            "output_tokens_count",
        ] {
            match v.get(key) {
                None | Some(Value::Null) => {}
                Some(n) => match n.as_u64().filter(|&n| n > 0) {
                    Some(n) => max_tokens = Some(n),
                    None => return Err(at(format!("\"{key}\" must be a whole number above 0"))),
                },
            }
        }
        out.push(Prompt {
            ask,
            max_tokens,
            line,
        });
    }
    Ok(out)
}

/// ShareGPT: each conversation's first human turn and the length of the reply after it;
/// conversations without both are left out (as vLLM's reader leaves them).
fn sharegpt(text: &str, name: &str) -> Result<Vec<Prompt>, String> {
    let all: Vec<Value> = serde_json::from_str(text)
        .map_err(|e| format!("--prompts {name}: not a ShareGPT JSON array ({e})"))?;
    let mut out = Vec::new();
    for (i, c) in all.iter().enumerate() {
        let turns = c
            .get("conversations")
            .or_else(|| c.get("conversation"))
            .and_then(Value::as_array);
        let Some(turns) = turns else {
            return Err(format!(
                "--prompts {name}: conversation {}: no \"conversations\" list",
                i + 1
            ));
        };
        let from = |t: &Value, who: &[&str]| {
            t.get("from")
                .and_then(Value::as_str)
                .is_some_and(|f| who.contains(&f))
        };
        let Some(asked) = turns.iter().position(|t| from(t, &["human", "user"])) else {
            continue;
        };
        let value = |t: &Value| t.get("value").and_then(Value::as_str).map(str::to_string);
        let Some(prompt) = value(&turns[asked]).filter(|p| !p.trim().is_empty()) else {
            continue;
        };
        let reply = turns[asked + 1..]
            .iter()
            .find(|t| from(t, &["gpt", "assistant"]))
            .and_then(value)
            .map(|r| r.split_whitespace().count() as u64)
            .filter(|&n| n > 0);
        let Some(reply) = reply else {
            continue;
        };
        out.push(Prompt {
            ask: Ask::Text(prompt),
            max_tokens: Some(reply),
            line: i + 1,
        });
    }
    Ok(out)
}

/// Made prompts: as many as fit [`MADE_PROMPTS`] and [`MADE_WORDS`], each of `input` words
/// drawn from a small vocabulary, different prompt to prompt (a server's prefix cache finds
/// nothing to share but the words).
fn made(input: Spread, rng: &mut Rng) -> Vec<Prompt> {
    const WORDS: [&str; 16] = [
        "the", "load", "of", "a", "server", "is", "what", "it", "answers", "when", "many", "ask",
        "at", "once", "and", "wait",
    ];
    let longest = input.mean + input.spread;
    let count = (MADE_WORDS / longest).clamp(1, MADE_PROMPTS as u64) as usize;
    (0..count)
        .map(|k| {
            let words = input.draw(rng);
            let mut text = format!("{k}");
            for _ in 1..words {
                text.push(' ');
                text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            Prompt {
                ask: Ask::Text(text),
                max_tokens: None,
                line: 0,
            }
        })
        .collect()
}

/// splitmix64: the made prompts and lengths, the same for the same seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies(e: &[TargetEntry]) -> Vec<Value> {
        e.iter()
            .map(|t| serde_json::from_slice(t.body.as_ref().unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn json_lines_become_chat_or_completion_requests() {
        let dir = std::env::temp_dir().join(format!("pelt-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.jsonl");
        std::fs::write(
            &file,
            "{\"prompt\": \"one two\", \"max_tokens\": 7}\n\n# a comment\n\
             {\"text\": \"three\"}\n\
             {\"messages\": [{\"role\": \"user\", \"content\": \"four five six\"}], \"output_tokens\": 2}\n\
             {\"prompt\": \"seven\", \"output_tokens_count\": 4}\n",
        )
        .unwrap();
        let p = Prompts {
            file: Some(file.clone()),
            output: Some(Spread { mean: 9, spread: 0 }),
            model: Some("m".into()),
            ..Prompts::default()
        };
        let chat = p.entries("http://h:1/v1/chat/completions", 0).unwrap();
        assert_eq!(chat.len(), 4);
        assert_eq!(chat[0].method.as_deref(), Some("POST"));
        assert_eq!(chat[0].headers, ["Content-Type: application/json"]);
        assert_eq!((chat[0].line, chat[1].line, chat[2].line), (1, 4, 5));
        let b = bodies(&chat);
        assert_eq!(
            b[0]["messages"],
            json!([{"role": "user", "content": "one two"}])
        );
        assert_eq!(b[0]["max_tokens"], 7);
        assert_eq!(b[0]["model"], "m");
        assert_eq!(b[0]["stream"], true);
        assert_eq!(b[0]["stream_options"], json!({"include_usage": true}));
        // A line that does not say: --output-tokens.
        assert_eq!(b[1]["max_tokens"], 9);
        assert_eq!(b[2]["max_tokens"], 2);
        // GuideLLM's column.
        assert_eq!(b[3]["max_tokens"], 4);
        let text = bodies(&p.entries("http://h:1/v1/completions?x=1", 0).unwrap());
        assert_eq!(text[0]["prompt"], "one two");
        assert_eq!(text[2]["prompt"], "four five six");
        assert!(text[0].get("messages").is_none());
        // A line without a prompt, or with a bad count: one line naming the file and line.
        for (bad, says) in [
            (
                "{\"prompt\": \"a\"}\n{\"max_tokens\": 3}\n",
                "line 2: no prompt",
            ),
            (
                "{\"prompt\": \"a\", \"max_tokens\": -1}\n",
                "line 1: \"max_tokens\" must be",
            ),
            ("{\"prompt\": 5}\n", "line 1: no prompt"),
            ("{not json\n", "line 1: not JSON"),
            ("\n# nothing\n", "no prompt in it"),
        ] {
            std::fs::write(&file, bad).unwrap();
            let e = p.entries("http://h:1/v1/completions", 0).err().unwrap();
            assert!(e.contains(&format!("--prompts {}", file.display())), "{e}");
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sharegpt_conversations_give_their_first_question_and_its_answers_length() {
        let text = r#"[
            {"id": "a", "conversations": [{"from": "human", "value": "why is the sky blue"},
                                          {"from": "gpt", "value": "light scatters off air"}]},
            {"id": "b", "conversations": [{"from": "human", "value": "no answer"}]},
            {"id": "c", "conversations": [{"from": "system", "value": "be brief"},
                                          {"from": "human", "value": "hi"},
                                          {"from": "gpt", "value": "hello"}]}
        ]"#;
        let p = read(text.as_bytes(), "s.json").unwrap();
        assert_eq!(p.len(), 2);
        assert!(matches!(&p[0].ask, Ask::Text(t) if t == "why is the sky blue"));
        assert_eq!((p[0].max_tokens, p[1].max_tokens), (Some(4), Some(1)));
        assert_eq!(p[1].line, 3);
        let e = read(b"[{\"x\": 1}]", "s.json").err().unwrap();
        assert!(e.contains("conversation 1: no \"conversations\""), "{e}");
    }

    #[test]
    fn made_prompts_have_the_lengths_asked_for_and_repeat_with_the_seed() {
        let p = Prompts {
            input: Some(Spread::parse("20,5").unwrap()),
            output: Some(Spread::parse("8,2").unwrap()),
            ..Prompts::default()
        };
        let e = p.entries("http://h:1/v1/chat/completions", 42).unwrap();
        assert_eq!(e.len(), MADE_PROMPTS);
        let b = bodies(&e);
        let words: Vec<u64> = b
            .iter()
            .map(|v| {
                let t = v["messages"][0]["content"].as_str().unwrap();
                t.split_whitespace().count() as u64
            })
            .collect();
        assert!(words.iter().all(|w| (15..=25).contains(w)));
        assert!(
            words.contains(&15) && words.contains(&25),
            "the spread's ends"
        );
        let max: Vec<u64> = b
            .iter()
            .map(|v| v["max_tokens"].as_u64().unwrap())
            .collect();
        assert!(max.iter().all(|m| (6..=10).contains(m)));
        assert!(max.contains(&6) && max.contains(&10));
        // Each prompt its own (it starts with its number); the same seed, the same requests.
        assert_ne!(b[0]["messages"], b[1]["messages"]);
        let again = p.entries("http://h:1/v1/chat/completions", 42).unwrap();
        assert_eq!(bodies(&again), b);
        assert_ne!(
            bodies(&p.entries("http://h:1/v1/chat/completions", 7).unwrap()),
            b
        );
        // Long prompts: fewer of them, within the words' budget.
        let long = Prompts {
            input: Some(Spread::parse("100000").unwrap()),
            ..Prompts::default()
        };
        assert_eq!(long.entries("http://h:1/", 0).unwrap().len(), 83);
    }

    #[test]
    fn a_spread_is_a_length_and_how_far_either_way() {
        assert_eq!(
            Spread::parse("512").unwrap(),
            Spread {
                mean: 512,
                spread: 0
            }
        );
        assert_eq!(Spread::parse("512,128").unwrap().text(), "512,128");
        assert!(Spread::parse_input("2000000")
            .unwrap_err()
            .contains("at most 1048576"));
        assert!(Spread::parse_input("1048000,576").is_ok());
        for (bad, says) in [
            ("128,-5", "negative"),
            ("0", "0 tokens"),
            ("10,10", "below the length"),
            ("x", "not a count"),
            ("10,y", "not a whole number"),
        ] {
            let e = Spread::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
