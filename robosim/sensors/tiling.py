"""Image layout helpers: tile batched frames into one picture, draw text overlays."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch


def _as_numpy(images) -> np.ndarray:
    return images.detach().cpu().numpy() if isinstance(images, torch.Tensor) else np.asarray(images)


def grid_shape(n: int, max_cols: int | None = None) -> tuple[int, int]:
    """(rows, cols) of a near-square grid holding n tiles."""
    cols = math.ceil(math.sqrt(n)) if max_cols is None else min(max_cols, n)
    return math.ceil(n / cols), cols


def tile_grid(frames, cols: int | None = None, pad: int = 2, pad_value: int = 32) -> np.ndarray:
    """uint8 (N, H, W, 3) -> one uint8 (rows*(H+pad)-pad, cols*(W+pad)-pad, 3) picture,
    tiles in row-major env order; unused cells are filled with pad_value."""
    frames = _as_numpy(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 of shape (N, H, W, 3), got {frames.dtype} {frames.shape}")
    n, h, w, _ = frames.shape
    rows, cols = grid_shape(n, cols)
    out = np.full((rows * (h + pad) - pad, cols * (w + pad) - pad, 3), pad_value, dtype=np.uint8)
    for k in range(n):
        r, c = divmod(k, cols)
        out[r * (h + pad):r * (h + pad) + h, c * (w + pad):c * (w + pad) + w] = frames[k]
    return out


def depth_to_rgb(depth, far: float | None = None) -> np.ndarray:
    """float32 (N, H, W, 1) depth (m, 0 = none) -> uint8 (N, H, W, 3) grey, near = bright."""
    depth = _as_numpy(depth)[..., 0]
    far = float(depth.max()) if far is None else far
    far = far if far > 0 else 1.0
    grey = np.where(depth > 0, 255 * (1.0 - np.clip(depth / far, 0, 1)), 0)
    return np.repeat(grey[..., None], 3, axis=-1).astype(np.uint8)


def hstack_padded(images: Sequence[np.ndarray], pad: int = 2, pad_value: int = 32) -> np.ndarray:
    """Side by side (N, H_k, W_k, 3) batches -> (N, max H, sum W + pads, 3), top-aligned."""
    n = images[0].shape[0]
    height = max(im.shape[1] for im in images)
    width = sum(im.shape[2] for im in images) + pad * (len(images) - 1)
    out = np.full((n, height, width, 3), pad_value, dtype=np.uint8)
    x = 0
    for im in images:
        out[:, :im.shape[1], x:x + im.shape[2]] = im
        x += im.shape[2] + pad
    return out


def draw_text(image: np.ndarray, lines: Sequence[str], xy=(3, 2), color=(255, 255, 255)) -> np.ndarray:
    """Copy of uint8 (H, W, 3) `image` with `lines` written at pixel xy over a dark box."""
    from PIL import Image, ImageDraw

    pil = Image.fromarray(image)
    draw = ImageDraw.Draw(pil)
    text = "\n".join(lines)
    box = draw.multiline_textbbox(xy, text, spacing=1)
    draw.rectangle((box[0] - 2, box[1] - 1, box[2] + 2, box[3] + 1), fill=(0, 0, 0))
    draw.multiline_text(xy, text, fill=color, spacing=1)
    return np.asarray(pil)
