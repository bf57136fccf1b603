"""A Hugging Face encoder as a textcls model: the wrapper (model.py: words in, word-level attention maps out),
its word tokenizer (text.py: words to word pieces and back) and the word-piece view of one text (pieces.py: the
pieces the encoder read and its attention over them). Checkpoint folders: textcls.checkpoint.hf."""
