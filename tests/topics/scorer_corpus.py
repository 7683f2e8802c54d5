"""Papers of two fields with their own words, for the learned scorer's tests: a topic whose query names its
field, papers of the field that say so, papers of other fields, and a paper of the field that never does."""

from __future__ import annotations

import random

from bot.models import Paper
from bot.topics.scorer import MIN_POSITIVES
from tests.factories import make_paper


def words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


QEC_WORDS = words(
    "surface code logical qubits syndrome decoder stabilizer fault tolerant threshold physical qubits "
    "lattice surgery magic state distillation erasure errors code distance"
)
VISION_WORDS = words(
    "image segmentation convolutional backbone pixels semantic masks object detection bounding boxes "
    "transformer encoder augmentation benchmark datasets resolution"
)
SPEECH_WORDS = words(
    "speech recognition acoustic model phonemes spectrogram speaker diarization word error rate audio "
    "waveform streaming latency transcription"
)

CATALOG = """
[[topic]]
slug = "quantum-error-correction"
name = "Quantum Error Correction"
description = "Protecting quantum information with codes."
definition = "Codes, decoders and fault tolerance for qubits. Out: classical coding theory."
query = '"quantum error correction"'

[[topic]]
slug = "speech-recognition"
name = "Speech Recognition"
description = "Turning speech into text."
definition = "Automatic speech recognition. Out: speech synthesis."
query = '"speech recognition" AND diarization AND nonexistentword'
"""


FIELD = MIN_POSITIVES + 20  # papers of the field that say the topic's words


def sentence(rng: random.Random, words: tuple[str, ...] | list[str], n: int) -> str:
    return " ".join(rng.choice(words) for _ in range(n))


def corpus(seed: int = 3) -> list[Paper]:
    """FIELD quantum error correction papers that say so, 300 vision and speech papers."""
    rng = random.Random(seed)
    papers = []
    for n in range(FIELD):
        papers.append(
            make_paper(
                100 + n,
                title=f"Quantum error correction with {sentence(rng, QEC_WORDS, 4)}",
                abstract=f"We study quantum error correction. {sentence(rng, QEC_WORDS, 40)}.",
            )
        )
    for n in range(300):
        words = VISION_WORDS if n % 2 else SPEECH_WORDS
        papers.append(
            make_paper(
                1000 + n,
                title=sentence(rng, words, 8).capitalize(),
                abstract=sentence(rng, words, 60).capitalize() + ".",
            )
        )
    return papers


# A paper of the field that never writes the topic's words: what a suggested match is for.
UNSAID = make_paper(
    9001,
    title="Faster decoders for the surface code with lattice surgery",
    abstract="Syndrome decoder for logical qubits: stabilizer measurements, code distance, magic state "
    "distillation and erasure errors below the fault tolerant threshold on physical qubits.",
)
ELSEWHERE = make_paper(
    9002,
    title="Semantic segmentation with a convolutional backbone",
    abstract="Object detection and bounding boxes on benchmark datasets with augmentation and masks.",
)
