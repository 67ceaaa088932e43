class Report
  def to_s
    <<~TEXT
      Report for #{@name}
      Total: #{@items.sum}
    TEXT
  end

  def shifts
    items = []
    items << 1 << 2
    [1 << 4, 256 >> 2]
  end
end
