"""Writes a Hugging Face tokenizer folder whose tokens are whitespace-separated words.

`pelt serve --sse-body openai` counts a word a token (its prompts' words, and the words `tok0 `,
`tok1 `, ... it streams), so AIPerf and GuideLLM, which need a Hugging Face tokenizer, count
what it counts with this one, loaded from disk (the Hugging Face hub is not needed).

Usage: python word_tokenizer.py FOLDER [WORDS...]   (with the peer's own Python: it needs the
`tokenizers` and `transformers` packages both peers install)
"""

import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

words = ["[UNK]"] + [f"tok{i}" for i in range(4096)] + sys.argv[2:]
t = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
# Decoding joins the words with spaces (no word here starts with the prefix).
t.decoder = decoders.WordPiece(prefix="##")
PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]").save_pretrained(sys.argv[1])
