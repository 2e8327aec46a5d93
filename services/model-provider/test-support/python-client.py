"""The official Python openai client against the provider: one completion, streamed or not.

Usage: python-client.py BASE_URL PROMPT stream|plain [MEMBERS]. MEMBERS is a JSON object of more request
members (stop, max_tokens, logprobs, ...). Prints one JSON line: the text, the usage, the finish reason and
how many chunks carried text (1 for a plain completion). Errors print {"error": status, "code": code,
"param": param} and exit 1.
"""
import json
import sys

import openai

base_url, prompt, mode = sys.argv[1], sys.argv[2], sys.argv[3]
members = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
client = openai.OpenAI(base_url=base_url, api_key="not-used", max_retries=0)
messages = [{"role": "user", "content": prompt}]
try:
    if mode == "stream":
        text, usage, pieces, finish = "", None, 0, None
        for chunk in client.chat.completions.create(model="sonnet", messages=messages, stream=True, stream_options={"include_usage": True}, **members):
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
                pieces += 1
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
            if chunk.usage is not None:
                usage = chunk.usage.model_dump(exclude_none=True)
    else:
        completion = client.chat.completions.create(model="sonnet", messages=messages, **members)
        text, usage, pieces = completion.choices[0].message.content, completion.usage.model_dump(exclude_none=True), 1
        finish = completion.choices[0].finish_reason
except openai.APIError as err:
    print(json.dumps({"error": getattr(err, "status_code", None), "code": getattr(err, "code", None), "param": getattr(err, "param", None)}))
    sys.exit(1)
print(json.dumps({"text": text, "usage": usage, "pieces": pieces, "finish": finish}))
