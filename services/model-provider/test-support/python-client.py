"""The official Python openai client against the provider: one completion, streamed or not.

Usage: python-client.py BASE_URL PROMPT stream|plain. Prints one JSON line: the text, the usage, and how
many chunks carried text (1 for a plain completion). Errors print {"error": status, "code": code} and exit 1.
"""
import json
import sys

import openai

base_url, prompt, mode = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base_url, api_key="not-used", max_retries=0)
messages = [{"role": "user", "content": prompt}]
try:
    if mode == "stream":
        text, usage, pieces = "", None, 0
        for chunk in client.chat.completions.create(model="sonnet", messages=messages, stream=True, stream_options={"include_usage": True}):
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
                pieces += 1
            if chunk.usage is not None:
                usage = chunk.usage.model_dump(exclude_none=True)
    else:
        completion = client.chat.completions.create(model="sonnet", messages=messages)
        text, usage, pieces = completion.choices[0].message.content, completion.usage.model_dump(exclude_none=True), 1
except openai.APIError as err:
    print(json.dumps({"error": getattr(err, "status_code", None), "code": getattr(err, "code", None)}))
    sys.exit(1)
print(json.dumps({"text": text, "usage": usage, "pieces": pieces}))
