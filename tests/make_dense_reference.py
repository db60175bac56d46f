"""Makes tests/dense_reference.npz: the packaged all-MiniLM-L6-v2 run by transformers' BertModel
on PyTorch (mean pooling, unit length, as sentence-transformers does), the reference the NumPy
forward pass is checked against. Run once, in a venv of its own (torch 2.13.0 CPU,
transformers 5.25.0): python tests/make_dense_reference.py MODEL_FOLDER tests/dense_reference.npz
"""

# ruff: noqa
import sys, numpy as np, torch
from transformers import BertModel, BertTokenizerFast

folder = sys.argv[1]
texts = [
    "John practices taekwondo twice a week",
    "Ana is allergic to peanuts",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "What martial arts has John done?",
    "Mei works as a counsellor at the youth centre",
    "Asked: plan the garden part 10: tomatoes and basil\nDone: read_file",
    "我开了家卖奶茶的小店",
    "Émilie a adopté deux chiots 🐶 à la SPA",
    "",
    "a " * 300 + "end",
]
tok = BertTokenizerFast.from_pretrained(folder)
model = BertModel.from_pretrained(folder).eval()
out = []
with torch.no_grad():
    for t in texts:
        b = tok([t], return_tensors="pt", truncation=True, max_length=256)
        h = model(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        v = (h * m).sum(1) / m.sum(1)
        out.append(torch.nn.functional.normalize(v, dim=1)[0].numpy())
np.savez(sys.argv[2], texts=np.array(texts), vectors=np.stack(out).astype(np.float32))
print("torch", torch.__version__)
