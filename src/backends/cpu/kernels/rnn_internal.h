// The fused recurrent step of the rnn family (rnn_cell.cc), for rnn.cc: float32 LSTM and
// linear-before-reset GRU cells of the common form (default activations, no clip, no
// peepholes, no input_forget) at small batches, where each step is a product of the state with
// the recurrent weights read once from cache, and the gates are applied to each 16-unit block
// of that product while it is still in registers.
#pragma once

#include <cstdint>
#include <vector>

namespace switchyard::cpu::rnn_cell {

enum class Cell { Lstm, GruLinearBeforeReset };

/// Hidden units per block of the packed weights (one AVX-512 register of float).
constexpr int64_t kUnits = 16;

inline int64_t gates_of(Cell cell) { return cell == Cell::Lstm ? 4 : 3; }

/// R [dirs, G*H, H] (ONNX gate order) packed per direction: for each block u of kUnits hidden
/// units and each k < H, G runs of kUnits floats, run g lane j = R[d, g*H + u*kUnits + j, k]
/// (zero past H). Size dirs * packed_direction_size(cell, hidden).
std::vector<float> pack_recurrent(Cell cell, const float* r, int64_t dirs, int64_t hidden);
int64_t packed_direction_size(Cell cell, int64_t hidden);

/// One direction of one layer.
struct Direction {
  Cell cell = Cell::Lstm;
  int64_t seq = 0, batch = 0, hidden = 0;
  const float* packed = nullptr;  // this direction's block of pack_recurrent
  /// X W^T + bias per step and row: row (t, b) at xw + (t * batch + b) * ldx, its G*H gate
  /// pre-activations in ONNX order. The biases: Wb + Rb for every gate, except the GRU's hidden
  /// gate, which has Wb only (its Rb is `rb_hidden`, applied inside the reset product).
  const float* xw = nullptr;
  int64_t ldx = 0;
  const float* rb_hidden = nullptr;  // GRU: Rb of the hidden gate [H]
  const int64_t* lengths = nullptr;  // [batch], each in [0, seq]
  bool reverse = false;
  float* h = nullptr;  // [batch, H]: the initial state in, the final state out
  float* c = nullptr;  // LSTM: [batch, H] cell state in and out
  /// Y rows: the state after step t of row b is written to y + t * y_step + b * H (ONNX's
  /// [seq, dirs, batch, H] with this direction's offset); rows past a length are not written.
  float* y = nullptr;
  int64_t y_step = 0;
};

/// Runs the recurrence of one direction (the AVX-512 build where use_avx512()).
void run_direction(const Direction& d);

}  // namespace switchyard::cpu::rnn_cell
