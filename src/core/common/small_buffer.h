#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

namespace tessera {

// A fixed-size array of `n` values, on the stack when n <= kInline (the few GPUs of a node, the
// shapes of a demand mix), on the heap otherwise. For working space in hot loops.
template <class T, size_t kInline>
class SmallBuffer {
 public:
  SmallBuffer(size_t n, const T& value) : size_(n) {
    if (n > kInline) {
      heap_.assign(n, value);
      data_ = heap_.data();
    } else {
      std::fill_n(inline_.data(), n, value);
      data_ = inline_.data();
    }
  }
  SmallBuffer(const SmallBuffer&) = delete;
  SmallBuffer& operator=(const SmallBuffer&) = delete;

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return size_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

 private:
  std::array<T, kInline> inline_;
  std::vector<T> heap_;
  T* data_;
  size_t size_;
};

}  // namespace tessera
