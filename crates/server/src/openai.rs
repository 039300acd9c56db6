//! `--sse-body openai`: an OpenAI-compatible streaming endpoint with no model behind it, so an
//! LLM serving benchmark can be tried without a GPU. What a request asks for shapes its
//! stream as a real server's would: `max_tokens` (or `max_completion_tokens`) tokens, a chat
//! completion's chunks for `messages` or a text completion's for `prompt`, and with
//! `stream_options: {"include_usage": true}` a last chunk with the `usage` counts before
//! `data: [DONE]`. Its "tokenizer" is a word a token: a prompt's tokens are its
//! whitespace-separated words, and the tokens it writes are the words `tok0 `, `tok1 `, ...
//! (several to a chunk with `--sse-tokens`). Its time to the first token grows with the
//! prompt (`--sse-prefill` a prompt token), as a model's prefill does.

use serde_json::Value;

/// What one request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ask {
    /// Tokens to write (`max_tokens`), `None`: the server's `--sse` events' worth.
    pub max_tokens: Option<u64>,
    /// The prompt's tokens (its words).
    pub prompt_tokens: u64,
    /// `stream_options.include_usage`: a last chunk with the counts.
    pub usage: bool,
    /// A text completion (`prompt`), not a chat completion (`messages`).
    pub text: bool,
}

impl Ask {
    /// Reads a request body; one that is not JSON (or not an object) asks for nothing.
    pub fn read(body: &[u8]) -> Ask {
        let Ok(Value::Object(v)) = serde_json::from_slice::<Value>(body) else {
            return Ask::default();
        };
        let max_tokens = ["max_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_u64));
        let usage = v
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let (text, prompt_tokens) = match (v.get("messages"), v.get("prompt")) {
            (Some(Value::Array(messages)), _) => (
                false,
                messages
                    .iter()
                    .filter_map(|m| m.get("content"))
                    .map(words_in)
                    .sum(),
            ),
            (_, Some(prompt)) => (true, words_in(prompt)),
            _ => (false, 0),
        };
        Ask {
            max_tokens,
            prompt_tokens,
            usage,
            text,
        }
    }
}

/// The words of a prompt or a message's content: a string, a list of strings (a batch of
/// prompts) or of content parts (`{"type": "text", "text": ...}`).
fn words_in(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.split_whitespace().count() as u64,
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::Object(o) => o.get("text").map_or(0, words_in),
                p => words_in(p),
            })
            .sum(),
        _ => 0,
    }
}

/// The chunk that carries tokens `from..to` of stream `stream` (`last`: it ends the answer).
pub(crate) fn chunk(ask: &Ask, stream: u64, from: u64, to: u64, last: bool) -> String {
    let mut tokens = String::with_capacity(8 * (to - from) as usize);
    for t in from..to {
        tokens.push_str(&format!("tok{t} "));
    }
    let finish = if last { "\"stop\"" } else { "null" };
    if ask.text {
        format!(
            "data: {{\"id\":\"cmpl-pelt-{stream}\",\"object\":\"text_completion\",\"model\":\"pelt\",\"choices\":[{{\"index\":0,\"text\":\"{tokens}\",\"finish_reason\":{finish}}}]}}\n\n"
        )
    } else {
        format!(
            "data: {{\"id\":\"chatcmpl-pelt-{stream}\",\"object\":\"chat.completion.chunk\",\"model\":\"pelt\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{tokens}\"}},\"finish_reason\":{finish}}}]}}\n\n"
        )
    }
}

/// The last chunk when the request asked for usage: no choices, the counts.
pub(crate) fn usage(ask: &Ask, stream: u64, completion_tokens: u64) -> String {
    let (id, object) = if ask.text {
        ("cmpl", "text_completion")
    } else {
        ("chatcmpl", "chat.completion.chunk")
    };
    let prompt = ask.prompt_tokens;
    format!(
        "data: {{\"id\":\"{id}-pelt-{stream}\",\"object\":\"{object}\",\"model\":\"pelt\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion_tokens},\"total_tokens\":{}}}}}\n\n",
        prompt + completion_tokens
    )
}

/// `--sse-log`: one stream as the server saw it, a JSON line written when it ends (its last
/// chunk handed over) or is dropped unfinished (the client went: `cancelled`). Times are
/// microseconds from the server's start; `arrived_us` is when its request was read (before
/// `--delay` and a stall).
pub(crate) struct Record {
    pub stream: u64,
    pub status: u16,
    pub arrived_us: u64,
    pub first_token_us: Option<u64>,
    pub done_us: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cancelled: bool,
}

impl Record {
    pub fn line(&self) -> String {
        serde_json::json!({
            "stream": self.stream,
            "status": self.status,
            "arrived_us": self.arrived_us,
            "first_token_us": self.first_token_us,
            "done_us": self.done_us,
            "ttft_us": self.first_token_us.map(|f| f.saturating_sub(self.arrived_us)),
            "e2e_us": self.done_us.saturating_sub(self.arrived_us),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cancelled": self.cancelled,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_says_how_many_tokens_in_which_shape_and_whether_to_count_them() {
        let chat = br#"{"model":"m","messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"one two three"}]}],
            "max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}"#;
        let a = Ask::read(chat);
        assert_eq!(
            a,
            Ask {
                max_tokens: Some(12),
                prompt_tokens: 5,
                usage: true,
                text: false
            }
        );
        let text = br#"{"prompt":"a b  c\nd","max_completion_tokens":3}"#;
        let a = Ask::read(text);
        assert_eq!(
            (a.max_tokens, a.prompt_tokens, a.usage, a.text),
            (Some(3), 4, false, true)
        );
        assert_eq!(Ask::read(b"not json"), Ask::default());
        assert_eq!(Ask::read(b"").max_tokens, None);
    }

    #[test]
    fn chunks_are_json_in_the_shape_asked_for() {
        let chat = Ask::default();
        let c = chunk(&chat, 7, 3, 5, false);
        let v: Value = serde_json::from_str(c.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(v["choices"][0]["delta"]["content"], "tok3 tok4 ");
        assert_eq!(v["choices"][0]["finish_reason"], Value::Null);
        let text = Ask {
            text: true,
            prompt_tokens: 4,
            ..Ask::default()
        };
        let c = chunk(&text, 7, 0, 1, true);
        let v: Value = serde_json::from_str(c.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["choices"][0]["text"], "tok0 ");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        let u = usage(&text, 7, 9);
        let v: Value = serde_json::from_str(u.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(v["choices"], serde_json::json!([]));
        assert_eq!(
            v["usage"],
            serde_json::json!({"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13})
        );
    }
}
