#include <vector>

namespace geo {
class Point {
 public:
  double norm() const { return x * x + y * y; }
  double x, y;
};
}  // namespace geo

int count(const std::vector<int>& v) { return static_cast<int>(v.size()); }
