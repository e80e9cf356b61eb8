// Small synthetic datasets, made in memory from a seed, so examples and tests need no downloads.
//
//   auto ds = tt::data::make_spirals(200, 3, 0.05, /*seed=*/0);   // 600 points, 3 arms
//   auto [train, test] = tt::data::train_test_split(*ds, 0.2, /*seed=*/1);   // data/preprocess.h
//
// Every maker returns a TensorDataset with float32 features [N, F] and int64 class labels [N] in
// 0..C-1, on the CPU. The rows come in a random order (classes interleaved), so an unshuffled
// DataLoader still sees mixed batches. Classes are balanced: exactly n per class where the
// signature says n_per_class, otherwise counts that differ by at most one. The same arguments
// give the same tensors. Deliberately left out: regression targets, file-backed datasets.
#pragma once

#include <cstdint>
#include <memory>

#include "tinytorch/data/dataset.h"

namespace tt::data {

// Interleaved spiral arms in the plane (the CS231n classifier problem). Arm k of n_classes
// starts at radius 0.1 and angle 2πk/n_classes and winds one full turn outward to radius 1;
// points are spread uniformly along each arm, then moved by Gaussian noise of std `noise` in
// each coordinate. Features [n_per_class * n_classes, 2] in about [-1, 1]².
// Hardness: not linearly separable (a least-squares linear classifier gets 55-65% on two
// arms, nearest centroid is at chance) but a small MLP (2-64-64-C, ReLU, Adam) learns it: at
// the default noise, held-out accuracy is about 100% for 2 arms and 98-100% for 3. Noise of 0.1
// and up, or many arms, blurs the gaps between the turns.
std::shared_ptr<TensorDataset> make_spirals(int64_t n_per_class, int64_t n_classes = 2, double noise = 0.05,
                                            uint64_t seed = 0);

// Two interleaving half circles (as scikit-learn's make_moons): class 0 on the upper arc
// (cos t, sin t), class 1 on the lower arc (1 - cos t, 0.5 - sin t), t uniform in [0, π], plus
// Gaussian noise of std `noise` per coordinate. Features [n, 2] in about [-1, 2] × [-0.5, 1].
// Hardness: not linearly separable (a linear classifier reaches about 85-90%); an MLP gets nearly
// 100% at noise 0.1 and about 95% at noise 0.2, where the tips of the moons overlap.
std::shared_ptr<TensorDataset> make_moons(int64_t n, double noise = 0.1, uint64_t seed = 0);

// The XOR problem: points in the four quadrants of [-1, 1]², each coordinate at least 0.1 away
// from the axes before noise; label 1 where x and y have opposite signs, else 0. Then Gaussian
// noise of std `noise` per coordinate (large noise pushes points across the axes, where their
// labels look wrong). Features [n, 2].
// Hardness: a linear classifier is at chance (50%); an MLP gets about 98% at the default noise
// (a few points cross the axes) and 100% at noise 0.05.
std::shared_ptr<TensorDataset> make_xor(int64_t n, double noise = 0.1, uint64_t seed = 0);

// Isotropic Gaussian blobs (as scikit-learn's make_blobs): n_classes centres drawn uniformly in
// [-10, 10]^n_features, each at least 5 from every other (the box grows if they do not fit),
// and points N(centre, spread²) per coordinate. Features [n, n_features].
// Hardness: easy at spread 1 (nearest centroid is about 99% right); spread 2.5 and up makes the
// blobs overlap.
std::shared_ptr<TensorDataset> make_blobs(int64_t n, int64_t n_classes = 3, int64_t n_features = 2,
                                          double spread = 1.0, uint64_t seed = 0);

// A digits-like pattern set: ten 8×8 glyphs of the digits 0-9, drawn by hand as bitmaps in
// synthetic.cpp. Each sample is one glyph moved by a random shift of -1, 0 or +1 pixels in each
// direction, inked at a random intensity in [0.6, 1], plus Gaussian pixel noise of std `noise`,
// clamped to [0, 1]. Features [10 * n_per_class, 64] (row-major 8×8 images, 0 = blank).
// Hardness: a stand-in for MNIST at the scale of a unit test. The shifts defeat pixel-by-pixel
// templates (nearest centroid gets only about 50%), but an MLP (64-64-64-10) trained on 700
// samples gets about 99% held out at the default noise, 96% at 0.2 and 85% at 0.3, where
// similar glyphs (0/6/8, 3/9) blur together.
std::shared_ptr<TensorDataset> make_digits(int64_t n_per_class, double noise = 0.1, uint64_t seed = 0);

// The glyph of digit d (0-9) as an [8, 8] float32 bitmap of 0s and 1s (no shift, no noise).
Tensor digit_glyph(int64_t d);

}  // namespace tt::data
