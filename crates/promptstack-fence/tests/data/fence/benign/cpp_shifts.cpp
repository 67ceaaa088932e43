#include <iostream>
#include <vector>
#include <map>

template <typename T>
std::vector<std::vector<T>> transpose(const std::vector<std::vector<T>>& m) {
    std::vector<std::vector<T>> out(m[0].size(), std::vector<T>(m.size()));
    for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m[i].size(); ++j)
            out[j][i] = m[i][j];
    return out;
}

int main() {
    unsigned flags = 1u << 3 | 1u << 5;
    unsigned high = flags >> 4;
    std::map<std::string, std::vector<int>> index;
    std::cout << "flags=" << flags << " high=" << high << std::endl;
    std::cin >> flags;
    flags <<= 2; flags >>= 1;
    return 0;
}
